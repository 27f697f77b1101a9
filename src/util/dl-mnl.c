// SPDX-License-Identifier: GPL-2.0-or-later
/* dl-mnl.c — libmnl through dlopen(), loaded explicitly (see dl.h)
 *
 * Only --net allow (init's nftables stage and the address pool on lo) and `aisb doctor` talk
 * netlink; linking libmnl and libnftnl cost every start 15 page faults at load (measured with
 * /usr/bin/time %R on an empty program: 69 without, 84 with the two). The stubs never load the
 * library themselves: the supervisor does, before init pivots into the sandbox's root.
 */
#include <libmnl/libmnl.h>

#include "util/dl.h"

#define MNL_FUNCTIONS(F, V)                                                                        \
	F(struct mnl_socket *, mnl_socket_open2, (int bus, int flags), (bus, flags), NULL)         \
	F(int, mnl_socket_bind, (struct mnl_socket *nl, unsigned int groups, pid_t pid),           \
	  (nl, groups, pid), -1)                                                                   \
	F(int, mnl_socket_close, (struct mnl_socket *nl), (nl), -1)                                \
	F(int, mnl_socket_get_fd, (const struct mnl_socket *nl), (nl), -1)                         \
	F(unsigned int, mnl_socket_get_portid, (const struct mnl_socket *nl), (nl), 0)             \
	F(ssize_t, mnl_socket_sendto, (const struct mnl_socket *nl, const void *req, size_t siz), \
	  (nl, req, siz), -1)                                                                      \
	F(ssize_t, mnl_socket_recvfrom, (const struct mnl_socket *nl, void *buf, size_t siz),     \
	  (nl, buf, siz), -1)                                                                      \
	F(struct nlmsghdr *, mnl_nlmsg_put_header, (void *buf), (buf), NULL)                       \
	F(void *, mnl_nlmsg_put_extra_header, (struct nlmsghdr *nlh, size_t size), (nlh, size),    \
	  NULL)                                                                                    \
	F(void *, mnl_nlmsg_get_payload, (const struct nlmsghdr *nlh), (nlh), NULL)                \
	F(bool, mnl_nlmsg_ok, (const struct nlmsghdr *nlh, int len), (nlh, len), false)            \
	F(struct nlmsghdr *, mnl_nlmsg_next, (const struct nlmsghdr *nlh, int *len), (nlh, len),   \
	  NULL)                                                                                    \
	V(mnl_attr_put, (struct nlmsghdr *nlh, uint16_t type, size_t len, const void *data),      \
	  (nlh, type, len, data))                                                                  \
	F(int, mnl_cb_run,                                                                         \
	  (const void *buf, size_t n, unsigned int seq, unsigned int portid, mnl_cb_t cb,          \
	   void *data),                                                                            \
	  (buf, n, seq, portid, cb, data), -1)

DL_DEFINE_STUBS(MNL_FUNCTIONS, dl_libmnl, "libmnl.so.0", "libmnl0", "for --net allow (netlink)", false, "netlink", "required")
