// SPDX-License-Identifier: GPL-2.0-or-later
/* relay-floor.c — the cheapest userspace TCP relay, as a yardstick for the gate (bench/gate.sh).
 *
 *   relay-floor LISTEN_PORT TARGET_PORT   (both on 127.0.0.1)
 *
 * Per connection: dial the target, then one thread per direction doing blocking
 * splice(socket -> 1 MiB pipe -> socket). No policy, no epoll, no netns, no accounting: whatever
 * the gate costs beyond this is the gate's own. Not part of aisb; bench only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct dir {
	int from, to;
};

static void *pump(void *arg)
{
	struct dir d = *(struct dir *)arg;
	int p[2];

	free(arg);
	if (pipe2(p, O_CLOEXEC) < 0)
		return NULL;
	(void)fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
	for (;;) {
		ssize_t n = splice(d.from, NULL, p[1], NULL, 1 << 20, SPLICE_F_MOVE);

		if (n <= 0)
			break;
		while (n > 0) {
			ssize_t k = splice(p[0], NULL, d.to, NULL, (size_t)n, SPLICE_F_MOVE);

			if (k <= 0)
				goto out;
			n -= k;
		}
	}
out:
	shutdown(d.to, SHUT_WR);
	close(p[0]);
	close(p[1]);
	return NULL;
}

static int spawn(int from, int to)
{
	struct dir *d = malloc(sizeof(*d));
	pthread_t t;

	if (!d)
		return -1;
	d->from = from;
	d->to = to;
	if (pthread_create(&t, NULL, pump, d) != 0) {
		free(d);
		return -1;
	}
	return pthread_detach(t) == 0 ? 0 : -1;
}

static int port_arg(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	return *s && !*end && v > 0 && v < 65536 ? (int)v : -1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int lport = argc == 3 ? port_arg(argv[1]) : -1, tport = argc == 3 ? port_arg(argv[2]) : -1;
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (lport < 0 || tport < 0) {
		fprintf(stderr, "usage: relay-floor LISTEN_PORT TARGET_PORT\n");
		return 2;
	}
	a.sin_port = htons((uint16_t)lport);
	(void)setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 64) < 0) {
		perror("relay-floor: listen");
		return 1;
	}
	for (;;) {
		struct sockaddr_in t = a;
		int c = accept4(l, NULL, NULL, SOCK_CLOEXEC), u;

		if (c < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		t.sin_port = htons((uint16_t)tport);
		u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (u < 0 || connect(u, (struct sockaddr *)&t, sizeof(t)) < 0 || spawn(c, u) < 0 || spawn(u, c) < 0) {
			perror("relay-floor: dial");
			close(c);
			if (u >= 0)
				close(u);
		}
		/* both fds stay open for the life of the process: this is a benchmark helper */
	}
}
