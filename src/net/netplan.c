// SPDX-License-Identifier: GPL-2.0-or-later
/* netplan.c — network settings to plan, and init's network stage */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <openssl/x509.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "net/gate.h"
#include "net/http.h"
#include "net/netplan.h"
#include "net/tlsgate.h"
#include "util/dl.h"
#include "util/fdpass.h"
#include "util/log.h"
#include "util/util.h"

#define ALLOW_FILE_MAX (1 << 20)

/* Entries from a file: one per line, '#' starts a comment, blank lines ignored. Logs on failure. */
static int add_allow_file(struct allow_list *l, const char *path)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0, lineno = 0;
	char *line, *next;
	int r;

	r = read_file_at(AT_FDCWD, path, ALLOW_FILE_MAX, &text, &len);
	if (r < 0)
		return log_error_errno(r, "cannot read --allow-file '%s': %m", path);
	for (line = text; line; line = next) {
		char *hash, *end;

		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		while (*line == ' ' || *line == '\t' || *line == '\r')
			line++;
		end = line + strlen(line);
		while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			*--end = '\0';
		if (!*line)
			continue;
		if (allow_list_add(l, line) < 0)
			return log_error_errno(-EINVAL, "in --allow-file '%s' line %zu", path, lineno);
	}
	return 0;
}

/**
 * netplan_resolve() - resolve the network settings
 * @s: settings
 * @out: the network plan
 *
 * The default mode is allow; when nothing is allowed and the mode was not chosen explicitly, the
 * sandbox gets --net none (the same policy: nothing reachable) instead of a refusal, so a plain
 * `aisb -- make` works. An explicit `--net allow` with an empty allowlist is exit 78.
 * Return: 0, or an exit code (78 policy, 125 failure). Logs on failure.
 */
/* Stage: the entries. Should: parse every --allow, --allow-file, --add-host, --allow-host-port,
 * --publish and --proxy into @n. Return: 0 or the exit code (78 for a bad entry, said). */
static int netplan_entries(const struct aisb_settings *s, struct net_plan *n)
{
	for (size_t i = 0; s->allows && s->allows[i]; i++)
		if (allow_list_add(&n->policy.allow, s->allows[i]) < 0)
			return AISB_EXIT_POLICY;
	for (size_t i = 0; s->allow_files && s->allow_files[i]; i++)
		if (add_allow_file(&n->policy.allow, s->allow_files[i]) < 0)
			return AISB_EXIT_POLICY;
	for (size_t i = 0; s->add_hosts && s->add_hosts[i]; i++)
		if (policy_add_pin(&n->policy, s->add_hosts[i]) < 0)
			return AISB_EXIT_POLICY;
	for (size_t i = 0; s->allow_host_ports && s->allow_host_ports[i]; i++)
		if (policy_add_host_port(&n->policy, s->allow_host_ports[i]) < 0)
			return AISB_EXIT_POLICY;
	n->n_publish = strv_length(s->publish);
	if (n->n_publish > PASTA_PUBLISH_MAX)
		return log_error("too many --publish entries (at most %d)", PASTA_PUBLISH_MAX), AISB_EXIT_POLICY;
	if (n->n_publish && !(n->publish = calloc(n->n_publish, sizeof(*n->publish))))
		return AISB_EXIT_FAILED;
	for (size_t i = 0; i < n->n_publish; i++)
		/* n_publish is strv_length(s->publish), 0 for NULL; the analyzer does not see into util.c.
		 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
		if (pasta_parse_publish(s->publish[i], &n->publish[i]) < 0)
			return AISB_EXIT_POLICY;
	if (s->proxy) {
		char host[ALLOW_NAME_MAX + 1];
		uint16_t port;

		if (http_split_hostport(s->proxy, strlen(s->proxy), host, sizeof(host), &port, 0) < 0)
			return log_error("invalid --proxy '%s' (use HOST:PORT)", s->proxy), AISB_EXIT_POLICY;
		if (!(n->upstream = strdup(s->proxy)))
			return AISB_EXIT_FAILED;
	}
	return 0;
}

/* Stage: allow mode. Should: tell a server-only sandbox (--publish, nothing out) from an empty
 * allowlist (an error, unless --net allow was only the default: then none), and refuse a
 * --publish of the gate's own ports (issue 10, escape 5). Return: 0 or 78 (said). */
static int netplan_allow_mode(const struct aisb_settings *s, struct net_plan *n, bool any_net_flag)
{
	if (n->policy.allow.n == 0 && n->policy.n_host_ports == 0 && n->n_publish > 0) {
		/* A server-only sandbox: --publish brings connections in, nothing goes out (the
		 * ruleset rejects every other output; the gate allows nothing). */
		n->ingress_only = true;
	} else if (n->policy.allow.n == 0 && n->policy.n_host_ports == 0) {
		if (s->net_source == SRC_DEFAULT && !any_net_flag) {
			n->mode = NET_NONE;
			n->defaulted_to_none = true;
			return 0;
		}
		log_error("--net allow with an empty allowlist allows nothing: add --allow ENTRY "
			  "(or --allow-file FILE), --publish PORTS for a server-only sandbox, or use --net none");
		return AISB_EXIT_POLICY;
	}
	for (size_t i = 0; s->publish && i < n->n_publish; i++)
		for (size_t k = 0; k < GATE_PORTS_N; k++)
			if (n->publish[i].port == gate_ports[k].port) {
				log_error("--publish '%s': port %u inside the sandbox is %s; published, every "
					  "local user of the host could use the sandbox's allowlist through it: "
					  "publish a server on another port", s->publish[i], gate_ports[k].port,
					  gate_ports[k].what);
				return AISB_EXIT_POLICY;
			}
	n->pasta = n->n_publish > 0 || allow_has_addr_entries(&n->policy.allow);
	return 0;
}

/* Stage: the mode. Should: refuse flags the mode ignores, decide whether pasta is needed and
 * find it. Return: 0 or the exit code (78 said, 125 out of memory). */
static int netplan_mode_stage(const struct aisb_settings *s, struct net_plan *n)
{
	bool any_net_flag = s->add_hosts || s->publish || s->allow_host_ports || s->proxy;
	int r = 0, k;

	switch (n->mode) {
	case NET_NONE:
		if (n->policy.allow.n || any_net_flag) {
			log_error("--allow, --add-host, --publish, --allow-host-port and --proxy have no effect "
				  "with --net none; drop them or use --net allow");
			return AISB_EXIT_POLICY;
		}
		break;
	case NET_ALLOW:
		r = netplan_allow_mode(s, n, any_net_flag);
		break;
	case NET_FULL:
		if (n->policy.allow.n || s->add_hosts || s->allow_host_ports || s->proxy) {
			log_error("--net full filters nothing: --allow, --add-host, --allow-host-port and --proxy "
				  "need --net allow");
			return AISB_EXIT_POLICY;
		}
		n->pasta = true;
		break;
	default:
		return AISB_EXIT_POLICY;
	}
	if (r != 0 || !n->pasta)
		return r;
	k = pasta_find(&n->pasta_path);
	if (k == -ENOMEM)
		return AISB_EXIT_FAILED;
	if (k < 0) {
		log_error("this policy needs pasta (%s), which is not installed: install the '%s' package",
			  n->mode == NET_FULL ? "--net full" : n->n_publish ? "--publish" : "IP/CIDR allow entries",
			  PASTA_PACKAGE);
		return AISB_EXIT_POLICY;
	}
	return 0;
}

/* Stage: the ruleset of allow mode, built once here and installed by init. Return: 0 or 78. */
static int netplan_ruleset(struct net_plan *n)
{
	uint16_t pub[PASTA_PUBLISH_MAX];
	struct nft_spec spec = { .transparent_port = GATE_TRANSPARENT_PORT, .pasta = n->pasta,
				 .allow = &n->policy.allow, .published = pub, .n_published = n->n_publish };

	for (size_t i = 0; i < n->n_publish; i++)
		pub[i] = n->publish[i].port;
	if (nft_ruleset_build(&spec, &n->ruleset) < 0) {
		log_error("the nftables ruleset is too large (at most %d rules)", NFT_RULES_MAX);
		return AISB_EXIT_POLICY;
	}
	return 0;
}

int netplan_resolve(const struct aisb_settings *s, struct net_plan **out)
{
	struct net_plan *n = calloc(1, sizeof(*n));
	int r;

	if (!n)
		return AISB_EXIT_FAILED;
	n->mode = s->net;
	r = netplan_entries(s, n);
	if (r == 0)
		r = netplan_mode_stage(s, n);
	if (r == 0 && n->mode == NET_ALLOW)
		r = netplan_ruleset(n);
	if (r != 0) {
		netplan_free(n);
		return r;
	}
	*out = n;
	return 0;
}

void netplan_free(struct net_plan *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n_keys; i++) {
		explicit_bzero(n->keys[i].value, strlen(n->keys[i].value));
		free(n->keys[i].value);
	}
	policy_free(&n->policy);
	free(n->tls_roots);
	free(n->tls_roots_dir);
	free(n->publish);
	free(n->upstream);
	free(n->pasta_path);
	nft_ruleset_free(&n->ruleset);
	free(n);
}

int netplan_add_key(struct net_plan *n, const char *host, uint16_t port, const char *placeholder, const char *value,
		    bool tls)
{
	const char *names[TLSGATE_NAMES_MAX];
	size_t vl = strlen(value);
	struct gate_key *k;

	if (n->n_keys >= GATE_KEYS_MAX)
		return -E2BIG;
	if (!vl || vl > GATE_KEY_VALUE_MAX || strlen(host) > ALLOW_NAME_MAX ||
	    strlen(placeholder) >= sizeof(k->placeholder))
		return -EINVAL;
	/* a header value: visible ASCII and spaces only, so it can never end the line or the head */
	for (size_t i = 0; i < vl; i++)
		if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] >= 0x7f)
			return -EINVAL;
	/* the tlsgate makes one leaf certificate per name, at its start */
	if (tls && netplan_tls_names(n, names) == TLSGATE_NAMES_MAX) {
		bool known = false;

		for (size_t i = 0; i < TLSGATE_NAMES_MAX; i++)
			known |= strcasecmp(names[i], host) == 0;
		if (!known)
			return -E2BIG;
	}
	k = &n->keys[n->n_keys];
	if (!(k->value = strdup(value)))
		return -ENOMEM;
	snprintf(k->host, sizeof(k->host), "%s", host);
	k->port = port;
	k->tls = tls;
	snprintf(k->placeholder, sizeof(k->placeholder), "%s", placeholder);
	n->n_keys++;
	return 0;
}

enum net_mode netplan_mode(const struct net_plan *n)
{
	return n ? n->mode : NET_NONE;
}

int netplan_tls_trust(struct net_plan *n, env_getter get)
{
	const char *f = get("SSL_CERT_FILE"), *d = get("SSL_CERT_DIR");

	if (n->tls_roots)
		return 0;
	/* what the tlsgate loads (net/tlsgate-tls.c): $SSL_CERT_FILE when set, else OpenSSL's
	 * default file (Debian: /usr/lib/ssl/cert.pem, a link to /etc/ssl/certs/ca-certificates.crt),
	 * and the files in $SSL_CERT_DIR when set */
	if (!f || !*f) {
		if (dl_load(&dl_libx509) < 0)
			return -ELIBACC;
		f = X509_get_default_cert_file();
	}
	if (!f || !*f || access(f, R_OK) < 0)
		return -ENOENT;
	if (d && *d && !(n->tls_roots_dir = strdup(d)))
		return -ENOMEM;
	return (n->tls_roots = strdup(f)) ? 0 : -ENOMEM;
}

bool netplan_has_tls(const struct net_plan *n)
{
	for (size_t i = 0; n && i < n->n_keys; i++)
		if (n->keys[i].tls)
			return true;
	return false;
}

size_t netplan_tls_names(const struct net_plan *n, const char **names)
{
	size_t k = 0;

	for (size_t i = 0; i < n->n_keys && k < TLSGATE_NAMES_MAX; i++) {
		bool seen = false;

		if (!n->keys[i].tls)
			continue;
		for (size_t j = 0; j < k; j++)
			seen |= strcasecmp(names[j], n->keys[i].host) == 0;
		if (!seen)
			names[k++] = n->keys[i].host;
	}
	return k;
}

bool netplan_has_gate(const struct net_plan *n)
{
	return n && n->mode == NET_ALLOW;
}

/* The https:// endpoints of --key-via-gate keys, each once: terminated by the tlsgate, and the
 * file of the host's roots it verifies them against (a path, never the contents). */
static void print_tls(const struct net_plan *n, FILE *f, bool policy)
{
	for (size_t i = 0; i < n->n_keys; i++) {
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			seen |= n->keys[j].tls && n->keys[j].port == n->keys[i].port &&
				strcasecmp(n->keys[j].host, n->keys[i].host) == 0;
		if (!n->keys[i].tls || seen)
			continue;
		if (policy)
			fprintf(f, "key_tls=%s:%u\n", n->keys[i].host, n->keys[i].port);
		else
			fprintf(f, "tls:        %s:%u terminated by aisb's tlsgate (the sandbox trusts a session CA "
				   "for it, %s); upstream verified against %s%s%s\n", n->keys[i].host, n->keys[i].port,
				PLAN_TLS_CA, n->tls_roots ? n->tls_roots : "(none)",
				n->tls_roots_dir ? " and the certificates in $SSL_CERT_DIR " : "",
				n->tls_roots_dir ? n->tls_roots_dir : "");
	}
	if (policy && n->tls_roots && netplan_has_tls(n))
		fprintf(f, "tls_upstream_trust=%s%s%s\n", n->tls_roots, n->tls_roots_dir ? ":" : "",
			n->tls_roots_dir ? n->tls_roots_dir : "");
}

void netplan_print(const struct net_plan *n, FILE *f)
{
	char e[ALLOW_NAME_MAX + 16];

	if (!n)
		return;
	if (n->defaulted_to_none)
		fprintf(f, "network:    none (the default allow mode with an empty allowlist: loopback only)\n");
	else if (n->mode == NET_NONE)
		fprintf(f, "network:    none (loopback only)\n");
	else if (n->mode == NET_FULL)
		fprintf(f, "network:    full (pasta, NOTHING FILTERED; IPv6 where the host has it, DNS: the host's resolver as %s)\n", PASTA_DNS_FORWARD);
	else if (n->ingress_only)
		fprintf(f, "network:    ingress only (--publish without an allow entry: every outbound connection "
			   "is refused)\n");
	else
		fprintf(f, "network:    allow through the gate (proxy 127.0.0.1:%d, DNS %s, transparent :%d)%s\n",
			GATE_PROXY_PORT, GATE_DNS_ADDR, GATE_TRANSPARENT_PORT, n->pasta ? ", pasta for IP paths" : "");
	for (size_t i = 0; i < n->policy.allow.n; i++)
		if (allow_format_entry(&n->policy.allow.v[i], e, sizeof(e)) == 0)
			fprintf(f, "allow:      %s\n", e);
	for (size_t i = 0; i < n->policy.n_pins; i++) {
		char a[ADDR_STRLEN];

		addr_format(&n->policy.pins[i].addr, a, sizeof(a));
		fprintf(f, "add-host:   %s=%s\n", n->policy.pins[i].name, a);
	}
	for (size_t i = 0; i < n->policy.n_host_ports; i++)
		fprintf(f, "host-port:  host.aisb.internal:%u -> host 127.0.0.1:%u\n", n->policy.host_ports[i],
			n->policy.host_ports[i]);
	for (size_t i = 0; i < n->n_publish; i++)
		fprintf(f, "publish:    %s:%u -> sandbox port %u\n", n->publish[i].addr, n->publish[i].host_port,
			n->publish[i].port);
	if (n->upstream)
		fprintf(f, "proxy:      every allowed connection through %s\n", n->upstream);
	print_tls(n, f, false);
}

void netplan_print_policy(const struct net_plan *n, FILE *f)
{
	char e[ALLOW_NAME_MAX + 16];

	if (!n)
		return;
	if (n->ingress_only)
		fprintf(f, "egress=none\n");
	for (size_t i = 0; i < n->policy.allow.n; i++)
		if (allow_format_entry(&n->policy.allow.v[i], e, sizeof(e)) == 0)
			fprintf(f, "allow=%s\n", e);
	for (size_t i = 0; i < n->policy.n_pins; i++) {
		char a[ADDR_STRLEN];

		addr_format(&n->policy.pins[i].addr, a, sizeof(a));
		fprintf(f, "add_host=%s=%s\n", n->policy.pins[i].name, a);
	}
	for (size_t i = 0; i < n->policy.n_host_ports; i++)
		fprintf(f, "allow_host_port=%u\n", n->policy.host_ports[i]);
	for (size_t i = 0; i < n->n_publish; i++)
		fprintf(f, "publish=%s:%u:%u\n", n->publish[i].addr, n->publish[i].host_port, n->publish[i].port);
	if (n->upstream)
		fprintf(f, "proxy=%s\n", n->upstream);
	print_tls(n, f, true);
	fprintf(f, "pasta=%s\n", n->pasta ? "true" : "false");
}

/**
 * netplan_print_ruleset() - --print-ruleset: the ruleset init would install, in `nft -f` syntax
 * @n: network plan
 * @f: output
 *
 * Does not log.
 */
void netplan_print_ruleset(const struct net_plan *n, FILE *f)
{
	if (!n || n->mode == NET_NONE) {
		fprintf(f, "# --net none: no nftables ruleset; the sandbox has only lo and no route out\n");
		return;
	}
	if (n->mode == NET_FULL) {
		fprintf(f, "# --net full: no nftables ruleset; nothing is filtered\n");
		return;
	}
	nft_ruleset_render(&n->ruleset, f);
}

/* ---- init's network stage ----------------------------------------------------------------- */

/* Adds the fake-address pool to lo, so connects to it route locally and nat can redirect them. */
static int lo_add_pool(void)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;
	struct net_addr pool;
	uint32_t seq = 1, portid;
	ssize_t len;
	int r = 0;

	addr_parse(NFT_POOL_ADDR, &pool);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = NFT_POOL_PLEN;
	ifa->ifa_scope = RT_SCOPE_HOST;
	ifa->ifa_index = 1; /* lo */
	mnl_attr_put(nlh, IFA_LOCAL, 4, pool.b);
	mnl_attr_put(nlh, IFA_ADDRESS, 4, pool.b);

	nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 || mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		r = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	len = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (len < 0 || mnl_cb_run(buf, (size_t)len, seq, portid, NULL, NULL) < 0)
		r = -errno;
out:
	mnl_socket_close(nl);
	return r;
}

static int listen_on(int type, const char *addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	_cleanup_close_ int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, addr, &sa.sin_addr);
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (type == SOCK_STREAM && listen(fd, 4096) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* The gate's part of the network stage, lo up and caps held. Should: put the pool on lo,
 * install and verify the ruleset (failure: exit 77, never run unfiltered), open the gate's
 * sockets on lo. Mustn't: create any interface or route out. Return: 0, or an exit code (77
 * enforcement, 125 failure) with @err filled. Does not log. */
static int gate_stage(const struct net_plan *n, int fds[NETPLAN_GATE_FDS], char *err, size_t err_size)
{
	static const struct { int type; const char *addr; uint16_t port; } l[NETPLAN_GATE_FDS] = {
		{ SOCK_STREAM, "127.0.0.1", GATE_PROXY_PORT },
		{ SOCK_STREAM, "127.0.0.1", GATE_TRANSPARENT_PORT },
		{ SOCK_DGRAM, GATE_DNS_ADDR, GATE_DNS_PORT },
		{ SOCK_STREAM, GATE_DNS_ADDR, GATE_DNS_PORT },
	};
	int r;

	for (int i = 0; i < NETPLAN_GATE_FDS; i++)
		fds[i] = -1;
	r = lo_add_pool();
	if (r < 0) {
		snprintf(err, err_size, "cannot add %s/%d to lo: %s", NFT_POOL_ADDR, NFT_POOL_PLEN, strerror(-r));
		return AISB_EXIT_ENFORCE;
	}
	r = nft_apply(&n->ruleset);
	if (r < 0) {
		snprintf(err, err_size, "the nftables ruleset could not be installed or verified (%s); "
			 "refusing to run unfiltered (run 'aisb doctor')", strerror(-r));
		return AISB_EXIT_ENFORCE;
	}
	for (int i = 0; i < NETPLAN_GATE_FDS; i++) {
		fds[i] = listen_on(l[i].type, l[i].addr, l[i].port);
		if (fds[i] < 0) {
			snprintf(err, err_size, "cannot open the gate's socket %s:%u: %s", l[i].addr, l[i].port,
				 strerror(-fds[i]));
			for (int k = 0; k < i; k++)
				close(fds[k]);
			return AISB_EXIT_FAILED;
		}
	}
	return 0;
}

/* Brings lo up (so --net none still has 127.0.0.1). Return: 0 or -errno. Does not log. */
static int lo_up(void)
{
	struct ifreq ifr = { 0 };
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return -errno;
	return 0;
}

int netplan_netns_stage(const struct net_plan *n, int fds[NETPLAN_GATE_FDS], char *err, size_t err_size)
{
	int r = lo_up();

	for (int i = 0; i < NETPLAN_GATE_FDS; i++)
		fds[i] = -1;
	if (r < 0) {
		snprintf(err, err_size, "cannot bring up the loopback interface: %s", strerror(-r));
		return AISB_EXIT_FAILED;
	}
	return netplan_has_gate(n) ? gate_stage(n, fds, err, err_size) : 0;
}

int netplan_gate_new(const struct net_plan *n, int log_fd, const char *log_path, const char *log_hint,
		     struct gate **out)
{
	const struct gate_config c = { .proxy_fd = -1, .transparent_fd = -1, .dns_udp_fd = -1, .dns_tcp_fd = -1,
				       .policy = &n->policy, .upstream = n->upstream, .log_fd = log_fd,
				       .log_path = log_path, .log_hint = log_hint, .log_max = n->egress_log_max,
				       .keys = n->keys, .n_keys = n->n_keys };

	return gate_new(&c, out);
}

#define LISTENERS_MAGIC 0x61697362u /* "aisb": the listeners follow */
#define LISTENERS_FAILED 0x6661696cu /* "fail": the policy could not be enforced (said) */

int netplan_listeners_send(int sock, int stage_rc, int fds[NETPLAN_GATE_FDS])
{
	uint32_t magic = stage_rc == 0 ? LISTENERS_MAGIC : LISTENERS_FAILED;
	int r;

	if (stage_rc != 0)
		return fdpass_send(sock, &magic, sizeof(magic), NULL, 0);
	r = fdpass_send(sock, &magic, sizeof(magic), fds, NETPLAN_GATE_FDS);
	for (int i = 0; i < NETPLAN_GATE_FDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

int netplan_listeners_take(int sock, struct gate *g)
{
	int fds[NETPLAN_GATE_FDS] = { -1, -1, -1, -1 };
	uint32_t magic = 0;
	size_t n = 0;
	ssize_t k;

	k = fdpass_recv(sock, &magic, sizeof(magic), fds, NETPLAN_GATE_FDS, &n);
	if (k == (ssize_t)sizeof(magic) && magic == LISTENERS_FAILED)
		return -EPERM;
	if (k != (ssize_t)sizeof(magic) || magic != LISTENERS_MAGIC || n != NETPLAN_GATE_FDS) {
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
		return -EPROTO;
	}
	/* the gate owns them from here on, also when it refuses them (it closes them) */
	return gate_listen(g, fds[0], fds[1], fds[2], fds[3]) < 0 ? -EPROTO : 0;
}
