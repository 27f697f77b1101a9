// SPDX-License-Identifier: GPL-2.0-or-later
/* resolver.c — the gate's resolver helper: getaddrinfo for names the policy lets through */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/resolver.h"
#include "util/util.h"

/* Queued requests beyond this are answered at once as failures: the gate caps its connections
 * too, so only a misbehaving gate gets here. */
#define RESOLVER_QUEUE_MAX 4096

struct job {
	struct job *next;
	struct resolver_req req;
};

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *queue, *tail;
	unsigned queued, idle, threads;
	int fd;
};

static void answer(int fd, const struct resolver_req *q, int err, const struct addrinfo *res)
{
	struct resolver_ans a = { .id = q->id, .err = err };

	for (const struct addrinfo *ai = res; ai && a.n < POLICY_ADDRS_MAX; ai = ai->ai_next) {
		struct net_addr x;
		bool dup = false;

		if (addr_from_sockaddr(ai->ai_addr, &x) < 0)
			continue;
		for (size_t k = 0; k < a.n; k++)
			dup |= addr_equal(&x, &a.addrs[k]);
		if (!dup)
			a.addrs[a.n++] = x;
	}
	/* a full socket buffer blocks this thread only; the gate drains answers in its loop */
	(void)send(fd, &a, sizeof(a), MSG_NOSIGNAL);
}

static void *worker(void *arg)
{
	struct pool *p = arg;

	for (;;) {
		struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
		struct job *j;
		int err;

		pthread_mutex_lock(&p->mu);
		p->idle++;
		while (!p->queue)
			pthread_cond_wait(&p->cv, &p->mu);
		p->idle--;
		j = p->queue;
		p->queue = j->next;
		if (!p->queue)
			p->tail = NULL;
		p->queued--;
		pthread_mutex_unlock(&p->mu);

		err = getaddrinfo(j->req.host, NULL, &hints, &res);
		answer(p->fd, &j->req, err ? (err == EAI_SYSTEM ? errno : -err) : 0, res);
		if (res)
			freeaddrinfo(res);
		free(j);
	}
	return NULL;
}

/* Checks one request: a complete message with a terminated name that the policy sends to the
 * host's resolver (POLICY_RESOLVE) exactly as given. */
static bool request_ok(const struct net_policy *policy, const struct resolver_req *q, ssize_t k)
{
	struct policy_decision d;

	if (k != (ssize_t)sizeof(*q) || !memchr(q->host, '\0', sizeof(q->host)))
		return false;
	policy_check(policy, q->host, q->port, &d);
	return d.step == POLICY_RESOLVE && streq(d.host, q->host);
}

_Noreturn void resolver_main(int fd, const struct net_policy *policy)
{
	struct pool p = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .fd = fd };

	for (;;) {
		struct resolver_req q;
		ssize_t k = recv(fd, &q, sizeof(q), MSG_TRUNC);
		struct job *j;
		bool spawn;

		if (k == 0 || (k < 0 && errno != EINTR))
			_exit(0); /* the gate is gone */
		if (k < 0)
			continue;
		if (!request_ok(policy, &q, k)) {
			q.host[0] = '\0';
			answer(fd, &q, EPERM, NULL);
			continue;
		}
		j = malloc(sizeof(*j));
		pthread_mutex_lock(&p.mu);
		if (!j || p.queued >= RESOLVER_QUEUE_MAX) {
			pthread_mutex_unlock(&p.mu);
			free(j);
			answer(fd, &q, EAGAIN, NULL);
			continue;
		}
		j->req = q;
		j->next = NULL;
		if (p.tail)
			p.tail->next = j;
		else
			p.queue = j;
		p.tail = j;
		spawn = ++p.queued > p.idle && p.threads < RESOLVER_THREADS;
		pthread_cond_signal(&p.cv);
		pthread_mutex_unlock(&p.mu);
		/* Threads start on demand: most sandboxes never resolve a name on the host (the DNS
		 * stub answers from the pool). If none can be started, the request waits for the
		 * gate's connect deadline (504), as it would behind a stuck resolver. */
		if (spawn) {
			pthread_t t;

			if (pthread_create(&t, NULL, worker, &p) == 0) {
				pthread_detach(t);
				p.threads++;
			}
		}
	}
}
