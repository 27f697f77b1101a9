// SPDX-License-Identifier: GPL-2.0-or-later
/* test-chunkq.c — the chunk queue between a producer and a consumer thread: order and content
 * across chunk boundaries, the bound on chunks in flight, and both sides' ways of stopping. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/chunkq.h"

#define TOTAL (1u << 20)

struct prod {
	struct chunkq *q;
	int close_err;     /* what the producer closes with */
	size_t stop_after; /* bytes */
	int last;          /* the last chunkq_write() result */
};

static void *producer(void *ud)
{
	struct prod *p = ud;
	unsigned char buf[777];
	size_t off = 0;

	while (off < p->stop_after) {
		size_t k = sizeof(buf);
		if (k > p->stop_after - off)
			k = p->stop_after - off;
		for (size_t i = 0; i < k; i++)
			buf[i] = (unsigned char)((off + i) * 31);
		p->last = chunkq_write(p->q, buf, k);
		off += k;
	}
	chunkq_close_write(p->q, p->close_err);
	return NULL;
}

/* A queue of @max chunks of 4 KiB with @p's producer running on it. */
static struct chunkq *start(struct prod *p, unsigned max, pthread_t *t)
{
	assert_int_equal(chunkq_new(4096, max, &p->q), 0);
	assert_int_equal(pthread_create(t, NULL, producer, p), 0);
	return p->q;
}

static void test_order_and_content(void **state)
{
	struct chunkq *q;
	struct prod p = { .stop_after = TOTAL };
	pthread_t t;
	size_t got = 0;
	ssize_t n;
	const void *b;

	(void)state;
	q = start(&p, 3, &t);
	while ((n = chunkq_read(q, &b)) > 0) {
		const unsigned char *c = b;
		assert_true(n <= 4096);
		for (ssize_t i = 0; i < n; i++)
			if (c[i] != (unsigned char)((got + (size_t)i) * 31))
				fail_msg("byte %zu wrong", got + (size_t)i);
		got += (size_t)n;
	}
	assert_int_equal(n, 0);
	assert_int_equal(got, TOTAL);
	pthread_join(t, NULL);
	chunkq_close_read(q, 0);
	chunkq_free(q);
}

/* The producer's error reaches the consumer in place of EOF; control above: 0 is EOF. */
static void test_producer_error(void **state)
{
	struct chunkq *q;
	struct prod p = { .stop_after = 10000, .close_err = -ECONNRESET };
	pthread_t t;
	ssize_t n;
	const void *b;

	(void)state;
	q = start(&p, 3, &t);
	while ((n = chunkq_read(q, &b)) > 0)
		;
	assert_int_equal(n, -ECONNRESET);
	assert_int_equal(chunkq_write_error(q), -ECONNRESET);
	pthread_join(t, NULL);
	chunkq_close_read(q, n);
	chunkq_free(q);
}

/* A consumer that is done (0) makes later writes succeed as dropped (1), so the producer can
 * read its input to the end; one that failed makes them fail with its error. Neither blocks
 * the producer on a full queue. */
static void test_consumer_stops(void **state)
{
	for (int err = 0; err >= -EIO; err -= EIO) {
		struct chunkq *q;
		struct prod p = { .stop_after = TOTAL };
		pthread_t t;
		const void *b;

		(void)state;
		q = start(&p, 2, &t);
		assert_true(chunkq_read(q, &b) > 0);
		chunkq_close_read(q, err);
		pthread_join(t, NULL);
		assert_int_equal(p.last, err == 0 ? 1 : err);
		chunkq_free(q);
	}
}

/* A producer ahead of its consumer sleeps on the full queue and is woken when half of it is
 * free, not for every chunk: 256 chunks through a queue of 8 wake it at most 256 / 4 times (+1
 * for the tail). It did sleep (the consumer is slower), so the bound is a real one. */
static void test_producer_wakes_in_batches(void **state)
{
	struct chunkq *q;
	struct prod p = { .stop_after = TOTAL };
	pthread_t t;
	const void *b;
	ssize_t n;
	size_t got = 0;
	unsigned long wakes;

	(void)state;
	q = start(&p, 8, &t);
	while ((n = chunkq_read(q, &b)) > 0) {
		got += (size_t)n;
		usleep(100); /* slower than the producer */
	}
	assert_int_equal(n, 0);
	assert_int_equal(got, TOTAL);
	pthread_join(t, NULL);
	wakes = chunkq_producer_wakeups(q);
	assert_true(wakes >= 1);
	assert_true(wakes <= TOTAL / 4096 / 4 + 1);
	chunkq_close_read(q, 0);
	chunkq_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_content),
		cmocka_unit_test(test_producer_error),
		cmocka_unit_test(test_consumer_stops),
		cmocka_unit_test(test_producer_wakes_in_batches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
