/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fdpass.h — messages with file descriptors over a unix socket (SCM_RIGHTS).
 *
 * Used on the supervisor<->init sync socket: init creates the pty master and (issue 3) the gate's
 * listening sockets inside the sandbox's namespaces and hands them out.
 */
#ifndef AISB_UTIL_FDPASS_H
#define AISB_UTIL_FDPASS_H

#include <stddef.h>

#define FDPASS_MAX 16

/* Sends @len bytes and @nfds fds in one message. Return: 0 or -errno. Does not log. */
int fdpass_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds);

/* Receives one message: at most @len bytes, at most @maxfds fds (all made O_CLOEXEC).
 * Return: bytes received (0 on EOF) or -errno; *nfds set. Does not log. */
int fdpass_recv(int sock, void *buf, size_t len, int *fds, size_t maxfds, size_t *nfds);

#endif
