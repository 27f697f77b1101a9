/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pasta.h — exec and supervise pasta (Debian's `passt` package) when a policy needs a real IP path.
 *
 * pasta is used only for `--net full`, IP/CIDR allow entries and `--publish`. It attaches to the
 * sandbox's netns by the init PID, always with `-T none -U none` (nothing of the host's loopback
 * reachable from inside) and `--no-map-gw` unless a host-loopback mapping is wanted; `-t` only
 * for --publish, bound to 127.0.0.1 unless an address is given. The options this pasta has are
 * read from `pasta --help` (the 2023-03 Debian 12 build lacks --map-host-loopback). pasta does
 * not exit when the namespace empties (measured), so pasta_stop() kills and reaps it.
 */
#ifndef AISB_NET_PASTA_H
#define AISB_NET_PASTA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define PASTA_PACKAGE "passt"
#define PASTA_PUBLISH_MAX 64
/* --net full: the sandbox's nameserver, which pasta (--dns-forward) maps to the host's first
 * resolver, whatever it is (127.0.0.53 of systemd-resolved included: pasta sends from the host).
 * Link-local, so routed out of the netns through pasta; only UDP/TCP port 53 is rewritten. */
#define PASTA_DNS_FORWARD "169.254.0.53"

struct pasta_opts {
	bool no_map_gw, map_host_loopback, config_net, tcp_ns, quiet, foreground, ipv4_only, runas, dns_forward;
};

struct pasta_publish {
	char addr[64];         /* host address to bind, "127.0.0.1" by default */
	uint16_t host_port, port;
};

struct pasta_spec {
	pid_t pid;             /* the sandbox's init, host pid */
	uid_t uid;             /* run pasta as this user (--runas): pasta started by root otherwise
				* drops to "nobody", which cannot open root's sandbox userns (measured) */
	gid_t gid;
	const struct pasta_publish *publish;
	size_t n_publish;
	const uint16_t *reserved;  /* ports inside no -t may ever target (the gate's listeners) */
	size_t n_reserved;
	bool map_host_loopback;
	bool ipv6;
	bool dns_forward;      /* --dns-forward PASTA_DNS_FORWARD (--net full) */
};

struct pasta {
	pid_t pid;
};

int pasta_parse_help(const char *text, struct pasta_opts *o);
int pasta_parse_publish(const char *spec, struct pasta_publish *out);
int pasta_build_argv(const struct pasta_opts *o, const struct pasta_spec *s, char ***argv);
int pasta_find(char **path);
int pasta_detect(const char *path, struct pasta_opts *o);
int pasta_start(const char *path, const struct pasta_opts *o, const struct pasta_spec *s, int log_fd,
		struct pasta *out);
void pasta_stop(struct pasta *p);

#endif
