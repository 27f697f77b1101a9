// SPDX-License-Identifier: GPL-2.0-or-later
/* fdpass.c — SCM_RIGHTS send/receive */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/fdpass.h"

int fdpass_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
	struct iovec iov = { (void *)buf, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds > FDPASS_MAX)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *c;
		memset(cbuf, 0, sizeof(cbuf));
		m.msg_control = cbuf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	for (;;) {
		ssize_t k = sendmsg(sock, &m, MSG_NOSIGNAL);
		if (k >= 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

int fdpass_recv(int sock, void *buf, size_t len, int *fds, size_t maxfds, size_t *nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
	struct iovec iov = { buf, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	ssize_t k;

	*nfds = 0;
	do
		k = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		size_t n;
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*nfds < maxfds)
				fds[(*nfds)++] = fd;
			else
				close(fd); /* more than asked for: never leak */
		}
	}
	if (m.msg_flags & MSG_CTRUNC)
		return -EMSGSIZE;
	return (int)k;
}
