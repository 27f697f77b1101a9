/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkq.h — a bounded queue of byte chunks between two threads (one producer, one consumer).
 *
 * The stages of a streamed layer (download + digest, decompression, extraction) run on their own
 * threads and hand bytes on through these queues, so a 2-core machine decompresses while it
 * creates files, as `tar -xzf` does with its gzip child. The producer copies into fixed-size
 * chunks; the consumer gets a pointer to a whole chunk (valid until its next read), which is what
 * libarchive's read callback wants. At most @max_chunks + 2 chunks exist at once: a producer
 * that gets ahead waits until half of them are free (so it wakes once per max/2 chunks, not once
 * per chunk). Either side can stop the other: the producer with an error (the consumer
 * reads it instead of EOF), the consumer with an error (the producer's writes fail with it) or
 * with 0, "done" (later writes are dropped, so a producer can still read its input to the end,
 * e.g. to finish its digest).
 */
#ifndef AISB_UTIL_CHUNKQ_H
#define AISB_UTIL_CHUNKQ_H

#include <stddef.h>
#include <sys/types.h>

struct chunkq;

/* Return: 0 or -ENOMEM. Does not log. */
int chunkq_new(size_t chunk_size, unsigned max_chunks, struct chunkq **out);
/* Accepts NULL. Both sides must be closed (or never used) first. */
void chunkq_free(struct chunkq *q);

/* Producer: copies @len bytes in, waiting while the queue is full.
 * Return: 0; 1 once the consumer closed with 0 (the bytes were dropped); the consumer's error;
 * -ENOMEM. Does not log. */
int chunkq_write(struct chunkq *q, const void *buf, size_t len);
/* Producer: no more bytes. @err 0 is EOF, < 0 makes the consumer's reads fail with it. */
void chunkq_close_write(struct chunkq *q, int err);
/* The producer's close code (0 while open or at EOF). */
int chunkq_write_error(struct chunkq *q);

/* How often the producer slept on a full queue (tests, benches). Does not log. */
unsigned long chunkq_producer_wakeups(struct chunkq *q);

/* Consumer: the next chunk. Return: its length (*buf points at it until the next call), 0 at
 * EOF, or the producer's error. Does not log. */
ssize_t chunkq_read(struct chunkq *q, const void **buf);
/* Consumer: stop reading; @err 0 means done (writes are dropped), < 0 failed (writes fail). */
void chunkq_close_read(struct chunkq *q, int err);

#endif
