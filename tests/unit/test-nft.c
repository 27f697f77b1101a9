// SPDX-License-Identifier: GPL-2.0-or-later
/* test-nft.c — ruleset builder: text rendering, batch parse-back, and a real apply in a private netns */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <sched.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "net/gate.h"
#include "net/netplan.h"
#include "net/nft.h"
#include "util/dl.h"

static char *render(const struct nft_ruleset *rs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(nft_ruleset_render(rs, f), 0);
	fclose(f);
	return buf;
}

static const char expect_plain[] =
	"table inet aisb {\n"
	"\tchain output {\n"
	"\t\ttype filter hook output priority filter; policy drop;\n"
	"\t\toif \"lo\" accept\n"
	"\t\tmeta nfproto ipv6 counter drop\n"
	"\t\tmeta l4proto tcp counter reject with tcp reset\n"
	"\t\tcounter reject with icmpx admin-prohibited\n"
	"\t}\n"
	"\n\tchain input {\n"
	"\t\ttype filter hook input priority filter; policy drop;\n"
	"\t\tiif \"lo\" accept\n"
	"\t}\n"
	"}\n"
	"table ip aisb {\n"
	"\tchain nat_output {\n"
	"\t\ttype nat hook output priority -100; policy accept;\n"
	"\t\tip daddr 198.18.0.0/15 meta l4proto tcp redirect to :3129\n"
	"\t}\n"
	"}\n";

static void test_render_plain(void **state)
{
	struct allow_list l = { 0 };
	struct nft_spec spec = { .transparent_port = 3129, .allow = &l };
	struct nft_ruleset rs;
	char *text;

	assert_int_equal(allow_list_add(&l, "example.com"), 0);
	assert_int_equal(allow_list_add(&l, "10.0.0.0/8"), 0); /* no pasta: no accept rule */
	assert_int_equal(nft_ruleset_build(&spec, &rs), 0);
	text = render(&rs);
	assert_string_equal(text, expect_plain);
	free(text);
	nft_ruleset_free(&rs);
	allow_list_free(&l);
}

static void test_render_pasta(void **state)
{
	struct allow_list l = { 0 };
	static const uint16_t pub[] = { 8080 };
	struct nft_spec spec = { .transparent_port = 3129, .allow = &l, .pasta = true,
				 .published = pub, .n_published = 1 };
	struct nft_ruleset rs;
	char *text;

	assert_int_equal(allow_list_add(&l, "10.20.0.0/16"), 0);
	assert_int_equal(allow_list_add(&l, "[2001:db8::5]:22"), 0);
	assert_int_equal(nft_ruleset_build(&spec, &rs), 0);
	text = render(&rs);
	/* neighbour discovery for IPv6, then the entries, most specific first */
	assert_non_null(strstr(text, "\t\tct state established,related accept\n"
				     "\t\ticmpv6 type nd-neighbor-solicit accept\n"
				     "\t\ticmpv6 type nd-neighbor-advert accept\n"
				     "\t\tip6 daddr 2001:db8::5 tcp dport 22 accept\n"
				     "\t\tip6 daddr 2001:db8::5 udp dport 22 accept\n"
				     "\t\tip daddr 10.20.0.0/16 tcp dport 443 accept\n"
				     "\t\tip daddr 10.20.0.0/16 udp dport 443 accept\n"
				     "\t\tip daddr 10.20.0.0/16 tcp dport 80 accept\n"
				     "\t\tip daddr 10.20.0.0/16 udp dport 80 accept\n"
				     "\t\tmeta l4proto tcp counter reject"));
	assert_null(strstr(text, "meta nfproto ipv6 counter drop")); /* an IPv6 entry exists */
	assert_non_null(strstr(text, "\t\ticmpv6 type nd-neighbor-advert accept\n\t\ttcp dport 8080 accept\n\t}"));
	free(text);
	assert_int_equal(nft_ruleset_count(&rs, NFT_CHAIN_OUTPUT), 12);
	assert_int_equal(nft_ruleset_count(&rs, NFT_CHAIN_INPUT), 5);
	assert_int_equal(nft_ruleset_count(&rs, NFT_CHAIN_NAT_OUTPUT), 1);
	nft_ruleset_free(&rs);
	allow_list_free(&l);
}

/* A catch-all entry gets the special ranges it contains rejected before its accepts; an entry
 * that names one of them (127.0.0.1:8080) comes first and stays open; without an IPv6 entry
 * no IPv6 range is listed (IPv6 is dropped whole). */
static void test_render_catch_all(void **state)
{
	struct allow_list l = { 0 };
	struct nft_spec spec = { .transparent_port = 3129, .allow = &l, .pasta = true };
	struct nft_ruleset rs;
	char *text, *named, *rej_lo, *rej_md, *rej_ll, *all;

	assert_int_equal(allow_list_add(&l, "0.0.0.0/0"), 0);
	assert_int_equal(allow_list_add(&l, "169.254.0.0/16:53"), 0);
	assert_int_equal(allow_list_add(&l, "127.0.0.1:8080"), 0);
	assert_int_equal(nft_ruleset_build(&spec, &rs), 0);
	text = render(&rs);
	named = strstr(text, "\t\tip daddr 127.0.0.1 tcp dport 8080 accept\n");
	rej_md = strstr(text, "\t\tip daddr 169.254.169.254 meta l4proto tcp counter reject with tcp reset\n"
			      "\t\tip daddr 169.254.169.254 counter reject with icmpx admin-prohibited\n"
			      "\t\tip daddr 169.254.0.0/16 tcp dport 53 accept\n");
	rej_lo = strstr(text, "\t\tip daddr 127.0.0.0/8 meta l4proto tcp counter reject with tcp reset\n"
			      "\t\tip daddr 127.0.0.0/8 counter reject with icmpx admin-prohibited\n");
	rej_ll = strstr(text, "\t\tip daddr 169.254.0.0/16 meta l4proto tcp counter reject");
	all = strstr(text, "\t\tip daddr 0.0.0.0/0 tcp dport 443 accept\n");
	if (!named || !rej_md || !rej_lo || !rej_ll || !all || !(named < rej_md && rej_md < rej_lo && rej_lo < all &&
								 rej_ll < all && rej_md < rej_ll))
		fail_msg("unexpected order:\n%s", text);
	assert_non_null(strstr(text, "ip daddr 10.0.0.0/8 counter reject"));
	assert_non_null(strstr(text, "ip daddr 192.168.0.0/16 counter reject"));
	assert_null(strstr(text, "ip6 daddr"));
	assert_non_null(strstr(text, "meta nfproto ipv6 counter drop"));
	free(text);
	nft_ruleset_free(&rs);
	allow_list_free(&l);
}

struct expr_walk {
	char kinds[256];
};

static int expr_cb(struct nftnl_expr *e, void *data)
{
	struct expr_walk *w = data;

	if (w->kinds[0])
		strncat(w->kinds, ",", sizeof(w->kinds) - strlen(w->kinds) - 1);
	strncat(w->kinds, nftnl_expr_get_str(e, NFTNL_EXPR_NAME), sizeof(w->kinds) - strlen(w->kinds) - 1);
	return 0;
}

static unsigned nfmsg_family(const struct nlmsghdr *h)
{
	const struct nfgenmsg *g = mnl_nlmsg_get_payload(h);

	return g->nfgen_family;
}

/* Build the batch, then parse every message back with libnftnl and compare with the description. */
static void test_batch_parse_back(void **state)
{
	struct allow_list l = { 0 };
	struct nft_spec spec = { .transparent_port = 3129, .allow = &l, .pasta = true };
	struct nft_ruleset rs;
	struct nftnl_batch *b = NULL;
	unsigned acks = 0, tables = 0, chains = 0, rules = 0;
	static const char *const expect_exprs[] = {
		"meta,cmp,immediate",                                  /* oif lo accept */
		"ct,bitwise,cmp,immediate",                            /* ct state */
		"meta,cmp,payload,cmp,meta,cmp,payload,cmp,immediate", /* ip daddr 10.1.2.3 tcp dport 5432 */
		"meta,cmp,payload,cmp,meta,cmp,payload,cmp,immediate", /* ... udp dport 5432 */
		"meta,cmp,counter,immediate",                          /* ipv6 drop */
		"meta,cmp,counter,reject",
		"counter,reject",
		"meta,cmp,immediate",                                  /* iif lo */
		"ct,bitwise,cmp,immediate",
		"payload,bitwise,cmp,meta,cmp,immediate,redir",        /* ip table: no nfproto */
	};

	assert_int_equal(allow_list_add(&l, "10.1.2.3:5432"), 0);
	assert_int_equal(nft_ruleset_build(&spec, &rs), 0);
	assert_int_equal(rs.n_rules, sizeof(expect_exprs) / sizeof(expect_exprs[0]));
	assert_int_equal(nft_ruleset_batch(&rs, 100, &b, &acks), 0);
	assert_int_equal(acks, 2 + NFT_CHAIN_MAX + rs.n_rules);

	int n_iov = nftnl_batch_iovec_len(b);
	struct iovec iov[16];

	assert_true(n_iov <= 16);
	nftnl_batch_iovec(b, iov, (uint32_t)n_iov);
	for (int i = 0; i < n_iov; i++) {
		const struct nlmsghdr *h = iov[i].iov_base;
		int left = (int)iov[i].iov_len;

		for (; mnl_nlmsg_ok(h, left); h = mnl_nlmsg_next(h, &left)) {
			uint16_t type = h->nlmsg_type & 0xff;

			if (h->nlmsg_type == NFNL_MSG_BATCH_BEGIN || h->nlmsg_type == NFNL_MSG_BATCH_END)
				continue;
			assert_true(h->nlmsg_flags & NLM_F_ACK);
			if (type == NFT_MSG_NEWTABLE) {
				struct nftnl_table *t = nftnl_table_alloc();

				assert_int_equal(nftnl_table_nlmsg_parse(h, t), 0);
				assert_string_equal(nftnl_table_get_str(t, NFTNL_TABLE_NAME), "aisb");
				assert_int_equal(nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY),
						 tables ? NFPROTO_IPV4 : NFPROTO_INET);
				nftnl_table_free(t);
				tables++;
			} else if (type == NFT_MSG_NEWCHAIN) {
				struct nftnl_chain *c = nftnl_chain_alloc();
				static const char *const names[] = { "output", "input", "nat_output" };
				static const unsigned pol[] = { NF_DROP, NF_DROP, NF_ACCEPT };
				static const unsigned fam[] = { NFPROTO_INET, NFPROTO_INET, NFPROTO_IPV4 };

				assert_int_equal(nftnl_chain_nlmsg_parse(h, c), 0);
				assert_string_equal(nftnl_chain_get_str(c, NFTNL_CHAIN_NAME), names[chains]);
				assert_int_equal(nftnl_chain_get_u32(c, NFTNL_CHAIN_POLICY), pol[chains]);
				assert_int_equal(nfmsg_family(h), fam[chains]);
				nftnl_chain_free(c);
				chains++;
			} else if (type == NFT_MSG_NEWRULE) {
				struct nftnl_rule *r = nftnl_rule_alloc();
				struct expr_walk w = { 0 };

				assert_int_equal(nftnl_rule_nlmsg_parse(h, r), 0);
				assert_string_equal(nftnl_rule_get_str(r, NFTNL_RULE_CHAIN),
						    nft_chain_name(rs.rules[rules].chain));
				assert_int_equal(nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY),
						 rs.rules[rules].chain == NFT_CHAIN_NAT_OUTPUT ? NFPROTO_IPV4 : NFPROTO_INET);
				nftnl_expr_foreach(r, expr_cb, &w);
				if (strcmp(w.kinds, expect_exprs[rules]) != 0)
					fail_msg("rule %u: %s, want %s", rules, w.kinds, expect_exprs[rules]);
				nftnl_rule_free(r);
				rules++;
			} else {
				fail_msg("unexpected message type %u", type);
			}
		}
	}
	assert_int_equal(tables, 2);
	assert_int_equal(chains, NFT_CHAIN_MAX);
	assert_int_equal(rules, rs.n_rules);
	nftnl_batch_free(b);
	nft_ruleset_free(&rs);
	allow_list_free(&l);
}

/* The real thing, in a private user+net namespace (skipped where none can be made). */
static void test_apply(void **state)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct allow_list l = { 0 };
		struct nft_spec spec = { .transparent_port = 3129, .allow = &l };
		struct nft_ruleset rs, other;

		if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
			_exit(77);
		if (nft_ruleset_build(&spec, &rs) < 0)
			_exit(1);
		if (nft_verify(&rs) == 0)
			_exit(2); /* nothing installed yet: verification must fail */
		if (nft_apply(&rs) < 0)
			_exit(3);
		if (nft_verify(&rs) < 0)
			_exit(4);
		spec.pasta = true;         /* a ruleset with other rules must not pass as this one */
		if (nft_ruleset_build(&spec, &other) < 0 || nft_verify(&other) == 0)
			_exit(6);
		if (nft_apply(&rs) == 0)
			_exit(5); /* the table exists now: NLM_F_EXCL must make the batch fail */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Forks with a pipe: returns 0 in the child (stdout+stderr are the pipe), the pid in the parent
 * with *@rfd the read end. */
static pid_t fork_piped(int *rfd)
{
	int fds[2];
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		return 0;
	}
	close(fds[1]);
	*rfd = fds[0];
	return pid;
}

/* Reads @fd to its end into a new string, closes it and reaps @pid; *@st is its status. */
static char *slurp_child(pid_t pid, int fd, int *st)
{
	char *out = malloc(1 << 20);
	size_t n = 0;

	assert_non_null(out);
	for (ssize_t k; (k = read(fd, out + n, (1 << 20) - 1 - n)) > 0;)
		n += (size_t)k;
	out[n] = '\0';
	close(fd);
	assert_int_equal(waitpid(pid, st, 0), pid);
	return out;
}

/* Runs "nft ARGS..." (from /usr/sbin or PATH) and returns its stdout+stderr, or NULL. */
static char *run_nft(const char *a1, const char *a2, const char *a3)
{
	int fd, st;
	pid_t pid = fork_piped(&fd);
	char *out;

	if (pid == 0) {
		char *const argv[] = { (char *)"nft", (char *)a1, (char *)a2, (char *)a3, NULL };

		execv("/usr/sbin/nft", argv);
		execvp("nft", argv);
		_exit(127);
	}
	out = slurp_child(pid, fd, &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "nft %s %s: status %d: %s\n", a1, a2 ? a2 : "", st, out);
		free(out);
		return NULL;
	}
	return out;
}

/* Handles and counter values differ between two installs; the rest must not. */
static void normalize(char *s)
{
	char *w = s;

	for (char *r = s; *r;) {
		if (strncmp(r, " packets ", 9) == 0) {  /* "counter packets N bytes M" -> "counter" */
			r += 9;
			while (*r && *r != ' ')
				r++;
			if (strncmp(r, " bytes ", 7) == 0) {
				r += 7;
				while (*r && *r != ' ' && *r != '\n')
					r++;
			}
			continue;
		}
		if (strncmp(r, "[ counter pkts ", 15) == 0) {
			memcpy(w, "[ counter ]", 11);
			w += 11;
			while (*r && *r != ']')
				r++;
			if (*r)
				r++;
			continue;
		}
		/* bytecode headers "inet aisb output 5 4": drop the handle numbers */
		if ((r == s || r[-1] == '\n') && (strncmp(r, "inet aisb ", 10) == 0 || strncmp(r, "ip aisb ", 8) == 0)) {
			char *nl = strchr(r, '\n'), *end = nl ? nl : r + strlen(r);

			while (end > r && (end[-1] == ' ' || (end[-1] >= '0' && end[-1] <= '9')))
				end--;
			memmove(w, r, (size_t)(end - r));
			w += end - r;
			r = nl ? nl : r + strlen(r);
			continue;
		}
		*w++ = *r++;
	}
	*w = '\0';
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t k;

	if (fd < 0)
		return -1;
	k = write(fd, s, strlen(s));
	close(fd);
	return k == (ssize_t)strlen(s) ? 0 : -1;
}

static int map_root(uid_t uid, gid_t gid)
{
	char m[64];

	snprintf(m, sizeof(m), "0 %u 1\n", (unsigned)uid);
	if (write_str("/proc/self/uid_map", m) < 0 || write_str("/proc/self/setgroups", "deny") < 0)
		return -1;
	snprintf(m, sizeof(m), "0 %u 1\n", (unsigned)gid);
	return write_str("/proc/self/gid_map", m);
}

/* A namespace child's output: status 0 passes, 77 skips (no user namespace here), anything else
 * fails naming @what. Caller frees. */
static char *child_output(pid_t pid, int fd, const char *what)
{
	int st;
	char *out = slurp_child(pid, fd, &st);

	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		free(out);
		skip();
	}
	if (WEXITSTATUS(st) != 0)
		fail_msg("%s: child status %d: %s", what, WEXITSTATUS(st), out);
	return out;
}

/* In a private user+net namespace: install @rs (or nft -f of @text) and list it with nft. */
static char *install_and_list(const struct nft_ruleset *rs, const char *text, bool debug)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fd;
	pid_t pid = fork_piped(&fd);
	char *out;

	if (pid == 0) {
		char *listing;

		if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
			_exit(77);
		if (map_root(uid, gid) < 0)
			_exit(7); /* exec'd nft keeps its capabilities only as uid 0 */
		if (rs && nft_apply(rs) < 0)
			_exit(3);
		if (text) {
			char path[] = "/tmp/aisb-test-nft.XXXXXX";
			int tfd = mkstemp(path);

			if (tfd < 0 || write(tfd, text, strlen(text)) != (ssize_t)strlen(text))
				_exit(4);
			close(tfd);
			listing = run_nft("-f", path, NULL);
			unlink(path);
			if (!listing)
				_exit(5);
			free(listing);
		}
		listing = run_nft(debug ? "--debug=netlink" : "list", debug ? "list" : "ruleset", debug ? "ruleset" : NULL);
		if (!listing)
			_exit(6);
		(void)!write(1, listing, strlen(listing));
		_exit(0);
	}
	out = child_output(pid, fd, "install_and_list");
	normalize(out);
	return out;
}

/* What init installs is exactly what --print-ruleset shows: nft (run by root in a netns) lists
 * the installed batch without failing, as the printed text (counter values aside), and the
 * batch's bytecode equals what nft itself makes of the printed text. Covers every construct:
 * plain, pasta with entries of every prefix shape, catch-alls with their special-range
 * rejects, IPv6 with neighbour discovery, published ports. (nft 1.0.6 aborted listing the old
 * batch: payload_expr_complete assertion.) */
static void test_installed_equals_printed(void **state)
{
	static const struct {
		bool pasta;
		const char *entries[6];
	} t[] = {
		{ false, { "example.com" } },
		{ true, { "10.20.0.0/16:5432", "10.20.0.0/15", "192.0.2.7", "[2001:db8::1]:443", "2001:db8::/33" } },
		{ true, { "0.0.0.0/0", "127.0.0.1:8080", "169.254.0.0/16" } },
		{ true, { "::/0", "0.0.0.0/1", "128.0.0.0/1", "[::1]:22" } },
		{ true, { "198.51.100.0/24:22" } },
	};
	static const uint16_t pub[] = { 8080, 2222 };

	if (access("/usr/sbin/nft", X_OK) < 0 && system("command -v nft >/dev/null 2>&1") != 0)
		skip(); /* the nftables package is in contrib/packages.txt; CI has it */
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct allow_list l = { 0 };
		struct nft_spec spec = { .transparent_port = 3129, .allow = &l, .pasta = t[i].pasta,
					 .published = pub, .n_published = t[i].pasta ? 2 : 0 };
		struct nft_ruleset rs;
		char *text, *ours, *theirs, *listed;

		for (size_t k = 0; k < 6 && t[i].entries[k]; k++)
			assert_int_equal(allow_list_add(&l, t[i].entries[k]), 0);
		assert_int_equal(nft_ruleset_build(&spec, &rs), 0);
		text = render(&rs);
		listed = install_and_list(&rs, NULL, false);
		if (strcmp(listed, text) != 0)
			fail_msg("case %zu: nft lists the installed batch as\n%s\nbut --print-ruleset says\n%s", i, listed, text);
		ours = install_and_list(&rs, NULL, true);
		theirs = install_and_list(NULL, text, true);
		if (strcmp(ours, theirs) != 0)
			fail_msg("case %zu: bytecode differs\n--- installed batch:\n%s\n--- nft -f of the text:\n%s", i, ours, theirs);
		free(text);
		free(listed);
		free(ours);
		free(theirs);
		nft_ruleset_free(&rs);
		allow_list_free(&l);
	}
}

/* Whether lo is up in this netns. */
static bool lo_is_up(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP);

	if (fd >= 0)
		close(fd);
	return up;
}

/* Whether @fd is bound to @addr:@port with socket type @type. */
static bool bound_to(int fd, int type, const char *addr, uint16_t port)
{
	struct sockaddr_in sa;
	socklen_t l = sizeof(sa);
	int t = 0;
	socklen_t tl = sizeof(t);
	char buf[INET_ADDRSTRLEN];

	return getsockname(fd, (struct sockaddr *)&sa, &l) == 0 && getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &tl) == 0 &&
	       t == type && ntohs(sa.sin_port) == port && inet_ntop(AF_INET, &sa.sin_addr, buf, sizeof(buf)) &&
	       strcmp(buf, addr) == 0;
}

/* The network stage that init and a build's RUN holder share (netplan_netns_stage()), in a
 * user+net namespace of its own: without a plan (--net none, a build without --allow) lo comes
 * up and no listener is opened; with an allowlist the ruleset is installed and the gate's four
 * listeners are bound where the sandbox's proxy variables and resolv.conf point. */
static void test_netns_stage(void **state)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fd;
	pid_t pid;

	(void)state;
	pid = fork_piped(&fd);
	if (pid == 0) {
		char *allows[] = { (char *)"example.com", NULL };
		struct aisb_settings s = { .net = NET_ALLOW, .net_source = SRC_FLAG, .allows = allows };
		struct net_plan *np = NULL;
		int fds[NETPLAN_GATE_FDS], r;
		char err[512] = "";

		if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
			_exit(77);
		if (map_root(uid, gid) < 0)
			_exit(7);
		/* no plan: lo only */
		if (lo_is_up() || netplan_netns_stage(NULL, fds, err, sizeof(err)) != 0 || !lo_is_up())
			_exit(10);
		for (int i = 0; i < NETPLAN_GATE_FDS; i++)
			if (fds[i] != -1)
				_exit(11);
		/* the gate's part */
		if (netplan_resolve(&s, &np) != 0 || !netplan_has_gate(np))
			_exit(12);
		r = netplan_netns_stage(np, fds, err, sizeof(err));
		if (r != 0) {
			(void)!write(1, err, strlen(err));
			_exit(13);
		}
		if (!bound_to(fds[0], SOCK_STREAM, "127.0.0.1", GATE_PROXY_PORT) ||
		    !bound_to(fds[1], SOCK_STREAM, "127.0.0.1", GATE_TRANSPARENT_PORT) ||
		    !bound_to(fds[2], SOCK_DGRAM, GATE_DNS_ADDR, GATE_DNS_PORT) ||
		    !bound_to(fds[3], SOCK_STREAM, GATE_DNS_ADDR, GATE_DNS_PORT))
			_exit(14);
		netplan_free(np);
		_exit(0);
	}
	free(child_output(pid, fd, "netns stage"));
}

int main(void)
{
	/* aisb loads them explicitly, before any use (util/dl.h) */
	if (dl_load(&dl_libmnl) < 0 || dl_load(&dl_libnftnl) < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render_plain),
		cmocka_unit_test(test_render_pasta),
		cmocka_unit_test(test_render_catch_all),
		cmocka_unit_test(test_batch_parse_back),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_installed_equals_printed),
		cmocka_unit_test(test_netns_stage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
