// SPDX-License-Identifier: GPL-2.0-or-later
/* tlsgate-wire.c — the gate's side of the tlsgate's control socket: handoffs out, events in.
 * No libssl here (the gate never loads it) and only sendmsg/recv: the gate's allowlist grows by
 * those two calls alone. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "net/tlsgate-internal.h"
#include "util/fdpass.h"
#include "util/macro.h"

int tlsgate_handoff(int ctl_fd, uint64_t id, const char *name, const void *pre, size_t pre_len,
		    int client, int upstream, int plain_client, int plain_upstream)
{
	unsigned char msg[sizeof(struct tlsgate_wire_handoff) + TLSGATE_PRE_MAX];
	struct tlsgate_wire_handoff h = { .type = TLSGATE_MSG_HANDOFF, .id = id };
	const int fds[TLSGATE_FD_MAX] = { client, upstream, plain_client, plain_upstream };
	size_t n = strlen(name);

	if (n == 0 || n >= sizeof(h.name) || pre_len > TLSGATE_PRE_MAX || (pre_len && !pre))
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(fds); i++)
		if (fds[i] < 0)
			return -EBADF;
	memcpy(h.name, name, n);
	h.pre_len = (uint32_t)pre_len;
	memcpy(msg, &h, sizeof(h));
	if (pre_len)
		memcpy(msg + sizeof(h), pre, pre_len);
	return fdpass_send(ctl_fd, msg, sizeof(h) + pre_len, fds, ELEMENTSOF(fds));
}

int tlsgate_event_read(int ctl_fd, struct tlsgate_event *ev)
{
	struct tlsgate_wire_event w;
	ssize_t k;

	do
		k = recv(ctl_fd, &w, sizeof(w), MSG_DONTWAIT | MSG_TRUNC);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	if (k == 0)
		return -EPIPE; /* the tlsgate is gone */
	if ((size_t)k != sizeof(w) || w.type != TLSGATE_MSG_EVENT)
		return -EPROTO;
	ev->id = w.id;
	ev->status = w.status;
	memcpy(ev->reason, w.reason, sizeof(ev->reason));
	ev->reason[sizeof(ev->reason) - 1] = '\0';
	return 1;
}
