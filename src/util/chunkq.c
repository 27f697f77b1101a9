// SPDX-License-Identifier: GPL-2.0-or-later
/* chunkq.c — a bounded single-producer, single-consumer queue of byte chunks */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/chunkq.h"

struct chunk {
	struct chunk *next;
	size_t len;
	unsigned char data[];
};

struct chunkq {
	pthread_mutex_t mu;
	pthread_cond_t can_read, can_write;
	size_t size;
	unsigned max, queued;
	struct chunk *head, *tail; /* full chunks, oldest first */
	struct chunk *spare;       /* recycled chunks */
	struct chunk *filling;     /* the producer's, not yet queued */
	struct chunk *reading;     /* the consumer's, handed out by the last read */
	bool wclosed, rclosed;
	int werr, rerr;
};

int chunkq_new(size_t chunk_size, unsigned max_chunks, struct chunkq **out)
{
	struct chunkq *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->can_read, NULL);
	pthread_cond_init(&q->can_write, NULL);
	q->size = chunk_size;
	q->max = max_chunks ? max_chunks : 1;
	*out = q;
	return 0;
}

static void chunks_free(struct chunk *c)
{
	while (c) {
		struct chunk *n = c->next;
		free(c);
		c = n;
	}
}

void chunkq_free(struct chunkq *q)
{
	if (!q)
		return;
	chunks_free(q->head);
	chunks_free(q->spare);
	free(q->filling);
	free(q->reading);
	pthread_cond_destroy(&q->can_read);
	pthread_cond_destroy(&q->can_write);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

/* With the lock held: queues the producer's chunk. */
static void push_filling(struct chunkq *q)
{
	struct chunk *c = q->filling;

	q->filling = NULL;
	c->next = NULL;
	if (q->tail)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	q->queued++;
	pthread_cond_signal(&q->can_read);
}

/* A chunk for the producer: waits while @max are queued. Return: 0, 1 (consumer done), the
 * consumer's error, -ENOMEM. */
static int get_filling(struct chunkq *q)
{
	int r = 0;

	pthread_mutex_lock(&q->mu);
	while (q->queued >= q->max && !q->rclosed)
		pthread_cond_wait(&q->can_write, &q->mu);
	if (q->rclosed) {
		r = q->rerr < 0 ? q->rerr : 1;
	} else if (q->spare) {
		q->filling = q->spare;
		q->spare = q->spare->next;
	}
	pthread_mutex_unlock(&q->mu);
	if (r == 0 && !q->filling) {
		q->filling = malloc(sizeof(struct chunk) + q->size);
		if (!q->filling)
			return -ENOMEM;
	}
	if (r == 0)
		q->filling->len = 0;
	return r;
}

int chunkq_write(struct chunkq *q, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len > 0) {
		size_t k;
		int r;

		if (!q->filling && (r = get_filling(q)) != 0)
			return r;
		k = q->size - q->filling->len;
		if (k > len)
			k = len;
		memcpy(q->filling->data + q->filling->len, p, k);
		q->filling->len += k;
		p += k;
		len -= k;
		if (q->filling->len == q->size) {
			pthread_mutex_lock(&q->mu);
			if (q->rclosed) {
				r = q->rerr < 0 ? q->rerr : 1;
				pthread_mutex_unlock(&q->mu);
				return r;
			}
			push_filling(q);
			pthread_mutex_unlock(&q->mu);
		}
	}
	return 0;
}

void chunkq_close_write(struct chunkq *q, int err)
{
	pthread_mutex_lock(&q->mu);
	if (q->filling && q->filling->len > 0 && err == 0 && !q->rclosed)
		push_filling(q);
	free(q->filling);
	q->filling = NULL;
	q->wclosed = true;
	q->werr = err;
	pthread_cond_broadcast(&q->can_read);
	pthread_mutex_unlock(&q->mu);
}

int chunkq_write_error(struct chunkq *q)
{
	int r;
	pthread_mutex_lock(&q->mu);
	r = q->wclosed ? q->werr : 0;
	pthread_mutex_unlock(&q->mu);
	return r;
}

ssize_t chunkq_read(struct chunkq *q, const void **buf)
{
	ssize_t r;

	pthread_mutex_lock(&q->mu);
	if (q->reading) {
		q->reading->next = q->spare;
		q->spare = q->reading;
		q->reading = NULL;
	}
	while (!q->head && !q->wclosed)
		pthread_cond_wait(&q->can_read, &q->mu);
	if (q->head && q->werr == 0) {
		q->reading = q->head;
		q->head = q->head->next;
		if (!q->head)
			q->tail = NULL;
		q->queued--;
		pthread_cond_signal(&q->can_write);
		*buf = q->reading->data;
		r = (ssize_t)q->reading->len;
	} else {
		*buf = NULL;
		r = q->werr;
	}
	pthread_mutex_unlock(&q->mu);
	return r;
}

void chunkq_close_read(struct chunkq *q, int err)
{
	struct chunk *drop;

	pthread_mutex_lock(&q->mu);
	q->rclosed = true;
	q->rerr = err;
	drop = q->head;
	q->head = q->tail = NULL;
	q->queued = 0;
	pthread_cond_broadcast(&q->can_write);
	pthread_mutex_unlock(&q->mu);
	chunks_free(drop);
}
