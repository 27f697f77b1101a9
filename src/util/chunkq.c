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

/* Wake-ups: a side is signalled only when it sleeps (rwait, wwait), after the lock is dropped,
 * and the producer only once the queue has drained to @low. perf sched of a zstd pull (docs/
 * measurements.md, "zstd layers") showed the three stages asleep ~70 % of the time: a signal
 * sent with the lock held made the kernel switch to the woken thread, which then blocked on the
 * lock its waker still held (__lll_lock_wait/_wake in 30 % of the context switches), and a
 * producer woken for every single free chunk ran one chunk at a time, a switch per 256 KiB. */
struct chunkq {
	pthread_mutex_t mu;
	pthread_cond_t can_read, can_write;
	size_t size;
	unsigned max, low, queued;
	bool rwait, wwait;         /* the consumer / the producer sleeps on its condition */
	unsigned long wakes;       /* producer wake-ups, for tests (chunkq_producer_wakeups()) */
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
	q->low = q->max / 2;
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

/* With the lock held: queues the producer's chunk. Return: whether the consumer sleeps and must
 * be signalled (once the lock is dropped). */
static bool push_filling(struct chunkq *q)
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
	if (!q->rwait)
		return false;
	q->rwait = false; /* one signal per sleep */
	return true;
}

/* A chunk for the producer: waits while @max are queued. Return: 0, 1 (consumer done), the
 * consumer's error, -ENOMEM. */
static int get_filling(struct chunkq *q)
{
	int r = 0;

	pthread_mutex_lock(&q->mu);
	if (q->queued >= q->max && !q->rclosed)
		q->wakes++;
	while (q->queued >= q->max && !q->rclosed) {
		q->wwait = true;
		pthread_cond_wait(&q->can_write, &q->mu);
	}
	q->wwait = false;
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
			bool wake;

			pthread_mutex_lock(&q->mu);
			if (q->rclosed) {
				r = q->rerr < 0 ? q->rerr : 1;
				pthread_mutex_unlock(&q->mu);
				return r;
			}
			wake = push_filling(q);
			pthread_mutex_unlock(&q->mu);
			if (wake)
				pthread_cond_signal(&q->can_read);
		}
	}
	return 0;
}

void chunkq_close_write(struct chunkq *q, int err)
{
	pthread_mutex_lock(&q->mu);
	if (q->filling && q->filling->len > 0 && err == 0 && !q->rclosed)
		(void)push_filling(q); /* the broadcast below wakes the consumer */
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

unsigned long chunkq_producer_wakeups(struct chunkq *q)
{
	unsigned long n;
	pthread_mutex_lock(&q->mu);
	n = q->wakes;
	pthread_mutex_unlock(&q->mu);
	return n;
}

ssize_t chunkq_read(struct chunkq *q, const void **buf)
{
	bool wake = false;
	ssize_t r;

	pthread_mutex_lock(&q->mu);
	if (q->reading) {
		q->reading->next = q->spare;
		q->spare = q->reading;
		q->reading = NULL;
	}
	while (!q->head && !q->wclosed) {
		q->rwait = true;
		pthread_cond_wait(&q->can_read, &q->mu);
	}
	q->rwait = false;
	if (q->head && q->werr == 0) {
		q->reading = q->head;
		q->head = q->head->next;
		if (!q->head)
			q->tail = NULL;
		q->queued--;
		/* a waiting producer gets room for max - low chunks at once */
		wake = q->wwait && q->queued <= q->low;
		if (wake)
			q->wwait = false; /* one signal per sleep */
		*buf = q->reading->data;
		r = (ssize_t)q->reading->len;
	} else {
		*buf = NULL;
		r = q->werr;
	}
	pthread_mutex_unlock(&q->mu);
	if (wake)
		pthread_cond_signal(&q->can_write);
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
