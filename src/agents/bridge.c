// SPDX-License-Identifier: GPL-2.0-or-later
/* bridge.c — the harness config bridges: read the host config, check the endpoint, write the home */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agents/bridge.h"
#include "agents/bridge-internal.h"
#include "agents/harness.h"
#include "net/addr.h"
#include "net/netplan.h"
#include "net/policy.h"
#include "net/tlsgate.h"
#include "util/log.h"
#include "util/util.h"

#define DEFAULT_TOKEN_ENV "AI_API_TOKEN"
#define DEFAULT_THINKING "xhigh"

struct bridge_plan {
	char *harness;
	bool key_via_gate;       /* the key variables hold placeholders; the gate adds the keys */
	struct bridge_result res;
	char **binds;            /* ephemeral home: top-level dirs under <session>/bridge-home */
};

void bridge_plan_free(struct bridge_plan *b)
{
	if (!b)
		return;
	free(b->harness);
	bridge_result_done(&b->res);
	strv_free(b->binds);
	free(b);
}

const char *const *bridge_home_binds(const struct bridge_plan *b)
{
	return b ? (const char *const *)b->binds : NULL;
}

/* ---- reading the host's config ----------------------------------------------------------- */

/* Reads @rel below the directory @dirfd without leaving it: symlinks inside are followed (dotfile
 * managers link config files), symlinks out of it, magic links and '..' escapes are refused by
 * the kernel (RESOLVE_BENEATH). Regular files up to BRIDGE_FILE_MAX only.
 * Return: 0, -ENOENT (absent), -EFBIG, -EINVAL (not a regular file), -errno. Does not log. */
static int read_beneath(int dirfd, const char *rel, char **out, size_t *len)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	struct stat st;
	char fdpath[64];

	if (fd < 0 && errno == ENOSYS)
		return -ENOSYS; /* kernels before 5.6: not bridged rather than followed blindly */
	if (fd < 0)
		return errno == EXDEV ? -EXDEV : -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size > BRIDGE_FILE_MAX)
		return -EFBIG;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	return read_file_at(AT_FDCWD, fdpath, BRIDGE_FILE_MAX, out, len);
}

/* Reads and parses ~/@rel. Absent: *@doc NULL, 0. Unusable: 78 after naming the file and the
 * switch that turns the bridge off. Logs on failure. */
static int host_file(int homefd, const char *rel, enum bridge_format fmt, const char *off_flag, json_object **doc)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	char err[160];
	int r;

	*doc = NULL;
	r = read_beneath(homefd, rel, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r == -EXDEV || r == -ELOOP)
		return log_error("~/%s leads out of your home directory (a symlink): not bridged; fix the "
				 "link or use %s", rel, off_flag), AISB_EXIT_POLICY;
	if (r == -EFBIG)
		return log_error("~/%s is larger than %d bytes: not bridged (use %s)", rel, BRIDGE_FILE_MAX,
				 off_flag), AISB_EXIT_POLICY;
	if (r < 0)
		return log_error_errno(r, "cannot read ~/%s: %m (use %s)", rel, off_flag), AISB_EXIT_POLICY;
	/* text is set when r is 0; the analyzer lets a failed fstat() return -errno >= 0 */
	if (memchr(text, 0, len)) /* NOLINT(clang-analyzer-core.NonNullParamChecker): see above */
		return log_error("~/%s holds a NUL byte: not bridged (use %s)", rel, off_flag), AISB_EXIT_POLICY;
	if (fmt == BRIDGE_JSON) {
		*doc = bridge_json_parse(text, len);
		if (!*doc)
			return log_error("~/%s is not a JSON object: not bridged; fix it or use %s", rel, off_flag),
			       AISB_EXIT_POLICY;
		return 0;
	}
	r = bridge_toml_parse(text, doc, err, sizeof(err));
	if (r == -ENOMEM)
		return AISB_EXIT_FAILED;
	if (r < 0)
		return log_error("~/%s: %s: aisb's TOML reader does not understand it, so nothing of it is "
				 "bridged; simplify it or use %s", rel, err, off_flag), AISB_EXIT_POLICY;
	return 0;
}

/* ---- the network check ------------------------------------------------------------------- */

/* The harness needs its model endpoint: refuse (78) when the policy does not reach it, with the
 * exact flag that would. The bridge never widens the allowlist itself. Logs on failure. */
static int check_endpoints(const struct aisb_plan *p, const char *harness, const struct bridge_result *r,
			   bool bridged)
{
	const struct net_plan *n = p->netp;

	if (n->mode == NET_FULL) {
		/* pasta runs with --no-map-gw: the host's loopback is not reachable, and
		 * host.aisb.internal is the gate's name */
		for (size_t i = 0; i < r->n_ep; i++)
			if (r->ep[i].loopback)
				return log_error("%s's model endpoint is on this host's loopback, port %u (%s), which "
						 "--net full cannot reach: use --allow-host-port %u instead", harness,
						 (unsigned)r->ep[i].port, r->ep[i].origin, (unsigned)r->ep[i].port),
				       AISB_EXIT_POLICY;
		return 0; /* the user chose: unfiltered */
	}
	if (n->mode == NET_NONE && !n->defaulted_to_none)
		return 0; /* offline on purpose */
	if (!r->n_ep && n->defaulted_to_none)
		return log_error("%s needs the network for its model, and nothing is allowed: add --allow HOST "
				 "for its model endpoint%s (or --net none to run it offline)", harness,
				 bridged ? "" : " (its config is not bridged, so aisb cannot name it)"),
		       AISB_EXIT_POLICY;
	for (size_t i = 0; i < r->n_ep; i++) {
		const struct bridge_endpoint *e = &r->ep[i];
		struct policy_decision d;

		policy_check(&n->policy, e->host, e->port, &d);
		if (n->mode == NET_ALLOW && d.step != POLICY_DENY)
			continue;
		if (!*d.suggest)
			snprintf(d.suggest, sizeof(d.suggest), "--allow %s:%u", e->host, (unsigned)e->port);
		if (e->loopback)
			return log_error("%s's model endpoint is on this host's loopback, port %u (%s): the sandbox "
					 "reaches it as %s:%u only with %s", harness, (unsigned)e->port, e->origin,
					 BRIDGE_HOST_INTERNAL, (unsigned)e->port, d.suggest), AISB_EXIT_POLICY;
		return log_error("%s's model endpoint %s:%u (%s) is not allowed: add %s%s", harness, e->host,
				 (unsigned)e->port, e->origin, d.suggest,
				 n->defaulted_to_none ? " (or --net none to run it offline)" : ""), AISB_EXIT_POLICY;
	}
	return 0;
}

/* ---- the key stays outside (--key-via-gate) -------------------------------------------------- */

/* Whether --key-via-gate (a list: "pi,codex", or one name per flag or config line) names @h.
 * Return: 0 (*@on set), or 78 for a name that is not a harness. Logs on failure. */
static int key_mode(const struct aisb_settings *s, const char *h, bool *on)
{
	*on = false;
	for (size_t i = 0; s->key_via_gate && s->key_via_gate[i]; i++) {
		const char *v = s->key_via_gate[i];

		while (*v) {
			size_t n = strcspn(v, ", ");

			if (n && !harness_findn(v, n))
				return log_error("--key-via-gate '%s': name a harness (%s)", s->key_via_gate[i],
						 harness_names("or")), AISB_EXIT_POLICY;
			if (n == strlen(h) && !strncmp(v, h, n))
				*on = true;
			v += n;
			v += strspn(v, ", ");
		}
	}
	return 0;
}

/* Can the gate add @h's key? Only where it reads the request: an http:// endpoint through the
 * gate, or an https:// one that the tlsgate terminates (docs/key-via-gate-tls.md), whose
 * upstream trust store is then resolved (netplan_tls_trust()). Return: 0 or 78. Logs on failure. */
static int key_mode_check(const struct aisb_plan *p, const char *h, const struct bridge_result *r, env_getter get)
{
	int e;

	if (p->netp->mode != NET_ALLOW || p->netp->defaulted_to_none)
		return log_error("%s: --key-via-gate needs the gate (--net allow with its model endpoint allowed): "
				 "with --net %s no request passes through it", h,
				 p->netp->mode == NET_FULL ? "full" : "none"), AISB_EXIT_POLICY;
	if (!r->n_ep)
		return log_error("%s: --key-via-gate needs the model endpoint, and aisb knows none (is the %s "
				 "config bridged?)", h, h), AISB_EXIT_POLICY;
	for (size_t i = 0; i < r->n_ep; i++) {
		struct net_addr a;

		if (!r->ep[i].tls)
			continue;
		/* a client sends no SNI for an address (RFC 6066 3), and the tlsgate serves a leaf for
		 * a name: measured, pi and curl to https://IP send none (docs/key-via-gate-tls.md, 5) */
		if (addr_parse(r->ep[i].host, &a) == 0)
			return log_error("%s: --key-via-gate: %s:%u (%s) is https:// to an IP address, which a TLS client "
					 "names to no one (no SNI): name the endpoint by a host name (--add-host "
					 "NAME=%s and NAME in the URL)", h, r->ep[i].host, (unsigned)r->ep[i].port,
					 r->ep[i].origin, r->ep[i].host), AISB_EXIT_POLICY;
		e = netplan_tls_trust(p->netp, get);
		if (e == -ENOMEM)
			return AISB_EXIT_FAILED;
		if (e < 0) {
			const char *f = get("SSL_CERT_FILE");

			return log_error("%s: --key-via-gate: %s:%u (%s) is https://, and the gate verifies it against "
					 "the host's trust store, but %s%s%s: set SSL_CERT_FILE to a readable PEM file "
					 "of the roots to trust", h, r->ep[i].host, (unsigned)r->ep[i].port,
					 r->ep[i].origin, e == -ELIBACC ? "libcrypto cannot be loaded to name it" :
					 f && *f ? "$SSL_CERT_FILE cannot be read: '" : "OpenSSL's default file cannot be read",
					 e != -ELIBACC && f && *f ? f : "", e != -ELIBACC && f && *f ? "'" : ""),
			       AISB_EXIT_POLICY;
		}
	}
	return 0;
}

/* The trust of the sandbox for the session CA the tlsgate signs its https:// endpoints' leaves
 * with: the CA and a bundle of it and the host's roots (run/session.c writes them, the mount
 * plan binds them read-only), named by the variables that node, OpenSSL, curl and Python's
 * requests read. Set in the plan's environment, never taken from the host's. Return: 0 or 125. */
static int set_tls_trust(struct aisb_plan *p)
{
	static const char *const vars[][2] = {
		{ "NODE_EXTRA_CA_CERTS", PLAN_TLS_CA }, { "SSL_CERT_FILE", PLAN_TLS_BUNDLE },
		{ "CURL_CA_BUNDLE", PLAN_TLS_BUNDLE }, { "REQUESTS_CA_BUNDLE", PLAN_TLS_BUNDLE },
	};

	if (p->tls_ca)
		return 0;
	p->tls_ca = true;
	for (size_t i = 0; i < ELEMENTSOF(vars); i++) {
		/* a variable the caller passed (--env, an env file) is replaced: the sandbox must trust
		 * the tlsgate. Said by name, never with the value it had. */
		for (size_t j = 0; j < p->n_env; j++)
			if (streq(p->env[j].name, vars[i][0]))
				log_info("--key-via-gate: %s inside names the session CA (%s), not the value you "
					 "passed: the sandbox's TLS to the model endpoint ends at aisb's tlsgate",
					 vars[i][0], vars[i][1]);
		if (plan_set_env(p, vars[i][0], vars[i][1], false) < 0)
			return AISB_EXIT_FAILED;
	}
	return 0;
}

/* Sets the key variable @inside for the sandbox: with --key-via-gate a placeholder, random per
 * session, and the real @value goes to the gate for each model endpoint (net/gate.h); without
 * it the value itself. Return: 0 or an exit code. Logs on failure. */
static int set_key(struct aisb_plan *p, const struct bridge_result *r, bool via_gate, const char *inside,
		   const char *value)
{
	char hex[GATE_PLACEHOLDER_HEX + 1], ph[GATE_PLACEHOLDER_SIZE];
	int e;

	if (!via_gate || !strv_contains(r->keys, inside))
		return plan_set_env(p, inside, value, true) < 0 ? AISB_EXIT_FAILED : 0;
	if ((e = random_hex(hex, GATE_PLACEHOLDER_HEX / 2)) < 0)
		return log_error_errno(e, "cannot make a placeholder key: %m"), AISB_EXIT_FAILED;
	snprintf(ph, sizeof(ph), GATE_PLACEHOLDER_PREFIX "%s", hex);
	for (size_t i = 0; i < r->n_ep; i++) {
		struct policy_decision d;

		policy_check(&p->netp->policy, r->ep[i].host, r->ep[i].port, &d);
		e = netplan_add_key(p->netp, d.host, d.port, ph, value, r->ep[i].tls);
		if (e == -EINVAL)
			return log_error("--key-via-gate: the value of $%s cannot go into a request header (empty, "
					 "longer than %d bytes, or a control character)", inside, GATE_KEY_VALUE_MAX),
			       AISB_EXIT_POLICY;
		if (e == -E2BIG)
			return log_error("--key-via-gate: more than %d keys and endpoints, or %d https:// endpoint "
					 "names", GATE_KEYS_MAX, TLSGATE_NAMES_MAX), AISB_EXIT_POLICY;
		if (e < 0 || (r->ep[i].tls && set_tls_trust(p) != 0))
			return AISB_EXIT_FAILED;
	}
	if (plan_set_env(p, inside, ph, true) < 0)
		return AISB_EXIT_FAILED;
	/* still "secret" (masked after the session like a passed value, never printed), but named as
	 * a placeholder in the scrub's report: it is no key (ns/scrub.c, scrub_needles()) */
	for (size_t i = 0; i < p->n_env; i++)
		if (streq(p->env[i].name, inside))
			p->env[i].placeholder = true;
	return 0;
}

/* ---- resolve ------------------------------------------------------------------------------- */

static int announce(const char *harness, const struct bridge_result *r)
{
	for (size_t i = 0; r->notes && r->notes[i]; i++)
		log_info("%s", r->notes[i]);
	if ((r->pass && *r->pass) || (r->alias && *r->alias)) {
		char names[512] = "";
		size_t o = 0, n = 0;
		for (size_t i = 0; r->pass && r->pass[i] && o < sizeof(names); i++, n++)
			o += (size_t)snprintf(names + o, sizeof(names) - o, "%s$%s", n ? ", " : "", r->pass[i]);
		for (size_t i = 0; r->alias && r->alias[i] && o < sizeof(names); i++, n++) {
			size_t k = strcspn(r->alias[i], "=");
			o += (size_t)snprintf(names + o, sizeof(names) - o, "%s$%s (as $%.*s)", n ? ", " : "",
					      r->alias[i] + k + 1, (int)k, r->alias[i]);
		}
		log_info("%s: passing %s to the sandbox by name (the config refers to %s)", harness, names,
			 n > 1 ? "them" : "it");
	}
	return 0;
}

/* With --key-via-gate: which variables hold a placeholder, and where the gate adds the key. */
static void key_line(const struct bridge_plan *b, char *out, size_t size)
{
	char names[256] = "", eps[512] = "";
	size_t o = 0, e = 0, n = 0;

	for (size_t i = 0; b->res.keys && b->res.keys[i] && o < sizeof(names); i++, n++)
		o += (size_t)snprintf(names + o, sizeof(names) - o, "%s$%s", i ? ", " : "", b->res.keys[i]);
	for (size_t i = 0; i < b->res.n_ep && e < sizeof(eps); i++)
		e += (size_t)snprintf(eps + e, sizeof(eps) - e, "%s%s:%u", i ? ", " : "", b->res.ep[i].host,
				      (unsigned)b->res.ep[i].port);
	snprintf(out, size, "%s: %s %s a placeholder inside (--key-via-gate); the gate adds the key to requests to %s",
		 b->harness, names, n > 1 ? "hold" : "holds", eps);
}

/* The bridge's own settings, checked whether or not there is anything to bridge: --thinking
 * and --pi-token-env. Return: 0 or 78. Logs on failure. */
static int settings_check(const struct aisb_settings *s)
{
	if (s->thinking && !streq(s->thinking, "host") && !bridge_thinking_valid(s->thinking))
		return log_error("--thinking '%s' is not a thinking level: use one of %s, or host (keep the "
				 "host's setting)", s->thinking, BRIDGE_THINKING_LEVELS), AISB_EXIT_POLICY;
	if (s->pi_token_env && !plan_env_name_valid(s->pi_token_env))
		return log_error("--pi-token-env '%s' is not a variable name", s->pi_token_env), AISB_EXIT_POLICY;
	return 0;
}

/* Reads the harness @hd's host files below @host_home (no home: nothing to read, the defaults
 * are bridged) and bridges them into @b->res. Return: 0 or an exit code. Logs on failure. */
static int read_and_bridge(const struct harness *hd, const struct bridge_ctx *c, const char *host_home,
			   struct bridge_plan *b)
{
	_cleanup_close_ int homefd = open(host_home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	json_object *in[HARNESS_FILES_MAX] = { NULL };
	int rc = 0, r;

	if (homefd < 0 && errno != ENOENT)
		return log_error_errno(-errno, "cannot open your home '%s': %m", host_home), AISB_EXIT_FAILED;
	for (size_t i = 0; homefd >= 0 && i < HARNESS_FILES_MAX && hd->files[i].rel && rc == 0; i++)
		rc = host_file(homefd, hd->files[i].rel, hd->files[i].fmt, hd->no_config_flag, &in[i]);
	r = rc == 0 ? hd->bridge(in, c, &b->res) : 0;
	for (size_t i = 0; i < HARNESS_FILES_MAX; i++)
		json_object_put(in[i]);
	if (rc != 0)
		return rc;
	if (r < 0)
		return log_error_errno(r, "cannot bridge the %s config: %m", b->harness), AISB_EXIT_FAILED;
	return 0;
}

/* The key variables: passed by name; one that the config needs but the host lacks is a
 * refusal, never a harness that cannot reach its model. Adds the one found to @b's pass and
 * keys lists. Return: 0 or an exit code. Logs on failure. */
static int token_check(const struct harness *hd, const struct bridge_ctx *c, const struct aisb_settings *s,
		       env_getter get, struct bridge_plan *b)
{
	const char *name = hd->token_env ? c->token_env : NULL, *h = b->harness;
	const char *v;

	if (!b->res.need_token)
		return 0;
	if (!name)
		for (size_t i = 0; b->res.pass && b->res.pass[i] && !name; i++)
			if (!((v = get(b->res.pass[i])) && *v))
				name = b->res.pass[i];
	if (hd->token_env && s->no_pi_token_env)
		name = NULL;
	if (name && !((v = get(name)) && *v)) {
		if (hd->token_env)
			return log_error("pi: %s: inside the sandbox its key comes from $%s (a literal or "
					 "'!command' key never reaches the sandbox), and %s is not set: export "
					 "%s=<your key> (or --pi-token-env NAME for another variable, "
					 "--no-pi-token-env for an endpoint without a key)",
					 b->res.token_origin ? b->res.token_origin : "models.json", name, name, name),
			       AISB_EXIT_POLICY;
		return log_error("%s: %s needs $%s, which is not set: export %s=<your key>", h,
				 b->res.token_origin ? b->res.token_origin : "the config", name, name),
		       AISB_EXIT_POLICY;
	}
	if (name && (strv_push(&b->res.pass, name) < 0 ||
		     (!strv_contains(b->res.keys, name) && strv_push(&b->res.keys, name) < 0)))
		return AISB_EXIT_FAILED;
	return 0;
}

/* The sandbox's variables of the bridge: the passed keys (or their placeholders, set_key()),
 * the aliases, and the fixed ones the bridge sets. Return: 0 or an exit code. Logs on failure. */
static int set_variables(struct aisb_plan *p, const struct bridge_plan *b, bool via_gate, env_getter get)
{
	int r;

	for (size_t i = 0; b->res.pass && b->res.pass[i]; i++) {
		const char *v = get(b->res.pass[i]);
		if (v && *v && (r = set_key(p, &b->res, via_gate, b->res.pass[i], v)) != 0)
			return r;
	}
	for (size_t i = 0; b->res.alias && b->res.alias[i]; i++) {
		_cleanup_free_ char *inside = strndup(b->res.alias[i], strcspn(b->res.alias[i], "="));
		const char *v;
		if (!inside)
			return AISB_EXIT_FAILED;
		v = get(b->res.alias[i] + strlen(inside) + 1);
		if (v && *v && (r = set_key(p, &b->res, via_gate, inside, v)) != 0)
			return r;
	}
	for (size_t i = 0; b->res.set && b->res.set[i]; i++) {
		_cleanup_free_ char *name = strndup(b->res.set[i], strcspn(b->res.set[i], "="));
		if (!name || plan_set_env(p, name, b->res.set[i] + strlen(name) + 1, false) < 0)
			return AISB_EXIT_FAILED;
	}
	return 0;
}

/* An ephemeral home (a tmpfs) gets the bridged files from <session dir>/bridge-home, where
 * bridge_apply() writes them: the top directories of their paths, each bound once, are decided
 * here (bridge_home_binds()), so that applying the bridge writes nothing into the plan. Return:
 * 0 or 125. Does not log. */
static int plan_binds(const struct aisb_plan *p, struct bridge_plan *b)
{
	if (p->home_src)
		return 0;
	for (size_t i = 0; i < b->res.n_files; i++) {
		_cleanup_free_ char *top = strndup(b->res.files[i].rel, strcspn(b->res.files[i].rel, "/"));
		if (!top)
			return AISB_EXIT_FAILED;
		if (!strv_contains(b->binds, top) && strv_push(&b->binds, top) < 0)
			return AISB_EXIT_FAILED;
	}
	return 0;
}

int bridge_resolve(struct aisb_plan *p, const struct aisb_settings *s, env_getter get, const char *host_home)
{
	struct bridge_ctx c = { .host_home = host_home, .get = get, .project_dst = p->project_dst ? p->project_dst : NULL };
	struct bridge_plan *b;
	const struct harness *hd = harness_find(s->harness);
	const char *h = s->harness;
	bool enabled, via_gate;
	int r;

	if ((r = settings_check(s)) != 0)
		return r;
	if (s->command || s->shell || !hd)
		return 0;
	if (!p->argv || !p->argv[0] || !streq(p->argv[0], h))
		return 0; /* an image's Entrypoint/Cmd runs instead of the harness */
	if ((r = key_mode(s, h, &via_gate)) != 0)
		return r;
	enabled = !harness_config_off(hd, s);

	b = calloc(1, sizeof(*b));
	if (!b || !(b->harness = strdup(h))) {
		free(b);
		return AISB_EXIT_FAILED;
	}
	p->bridge = b;
	c.token_env = s->pi_token_env ? s->pi_token_env : DEFAULT_TOKEN_ENV;
	c.thinking = s->thinking ? (streq(s->thinking, "host") ? NULL : s->thinking) : DEFAULT_THINKING;

	if (enabled && (r = read_and_bridge(hd, &c, host_home, b)) != 0)
		return r;
	if ((r = check_endpoints(p, h, &b->res, enabled)) != 0 || (r = token_check(hd, &c, s, get, b)) != 0)
		return r;
	if (via_gate && (r = key_mode_check(p, h, &b->res, get)) != 0)
		return r;
	b->key_via_gate = via_gate;
	if ((r = set_variables(p, b, via_gate, get)) != 0 || (r = plan_binds(p, b)) != 0)
		return r;
	if (via_gate && b->res.keys && *b->res.keys) {
		char line[1024];

		key_line(b, line, sizeof(line));
		log_info("%s", line);
	}
	return announce(h, &b->res);
}

/* ---- apply --------------------------------------------------------------------------------- */

/* Opens (creating) the directory @rel below @root, one component at a time and never through a
 * symlink: the sandbox owns the persistent home and may have planted links in it. Does not log. */
static int open_dir_beneath(int root, const char *rel)
{
	_cleanup_free_ char *copy = strdup(rel);
	int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
	char *part = copy, *next;

	if (!copy || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	for (; part && *part; part = next) {
		int nfd;
		next = strchr(part, '/');
		if (next)
			*next++ = 0;
		if (mkdirat(fd, part, 0700) < 0 && errno != EEXIST) {
			int e = -errno;
			close(fd);
			return e;
		}
		nfd = openat(fd, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (nfd < 0)
			return -errno;
		fd = nfd;
	}
	return fd;
}

/* Reads @name in @dirfd without following a link. NULL: absent or unusable (@present says
 * whether something was there). */
static json_object *read_doc(int dirfd, const char *name, enum bridge_format fmt, bool *present)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	_cleanup_free_ char *text = NULL;
	json_object *doc = NULL;
	char fdpath[64], err[8];
	struct stat st;
	size_t len = 0;

	*present = fd >= 0 || errno != ENOENT;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > BRIDGE_FILE_MAX)
		return NULL;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	if (read_file_at(AT_FDCWD, fdpath, BRIDGE_FILE_MAX, &text, &len) < 0 || memchr(text, 0, len))
		return NULL;
	if (fmt == BRIDGE_JSON)
		return bridge_json_parse(text, len);
	return bridge_toml_parse(text, &doc, err, sizeof(err)) == 0 ? doc : NULL;
}

/* Replaces @name in @dirfd atomically (a new file renamed over it: a planted symlink is replaced,
 * never followed). 0600. Does not log. */
static int write_atomic(int dirfd, const char *name, const char *text)
{
	char tmp[64], hex[17];
	_cleanup_close_ int fd = -1;
	int r;

	if ((r = random_hex(hex, 8)) < 0)
		return r;
	snprintf(tmp, sizeof(tmp), ".aisb-%s.tmp", hex);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if ((r = write_full(fd, text, strlen(text))) < 0 || (fchmod(fd, 0600) < 0 && (r = -errno)) ||
	    (renameat(dirfd, tmp, dirfd, name) < 0 && (r = -errno))) {
		(void)unlinkat(dirfd, tmp, 0);
		return r;
	}
	return 0;
}

static char *format_doc(json_object *doc, enum bridge_format fmt)
{
	return fmt == BRIDGE_JSON ? bridge_json_format(doc) : bridge_toml_format(doc);
}

/* Splits "a/b/c" into "a/b" and "c". */
static int split_rel(const char *rel, char **dir, const char **base)
{
	const char *sl = strrchr(rel, '/');
	*base = sl ? sl + 1 : rel;
	*dir = sl ? strndup(rel, (size_t)(sl - rel)) : strdup("");
	return *dir ? 0 : -ENOMEM;
}

static int apply_file(int root, int basefd, const struct bridge_file *f)
{
	_cleanup_free_ char *dir = NULL, *text = NULL, *btext = NULL;
	json_object *cur = NULL, *base = NULL, *merged;
	_cleanup_close_ int dfd = -1, bdfd = -1;
	const char *name;
	bool present = false, bpresent;
	int r;

	if ((r = split_rel(f->rel, &dir, &name)) < 0)
		return r;
	dfd = *dir ? open_dir_beneath(root, dir) : fcntl(root, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return log_error_errno(dfd, "cannot open '%s' in the sandbox home: %m (is it a symlink? "
				       "'aisb clean --volumes' resets the home)", dir), dfd;
	if (basefd >= 0) {
		bdfd = *dir ? open_dir_beneath(basefd, dir) : fcntl(basefd, F_DUPFD_CLOEXEC, 3);
		if (bdfd < 0)
			return log_error_errno(bdfd, "cannot open the bridge's copy of '%s': %m", dir), bdfd;
		cur = read_doc(dfd, name, f->fmt, &present);
		base = read_doc(bdfd, name, f->fmt, &bpresent);
		if (present && !cur)
			log_warn("~/%s in the sandbox home is not valid %s: seeded again from the host config", f->rel,
				 f->fmt == BRIDGE_JSON ? "JSON" : "TOML (in aisb's subset)");
	}
	merged = bridge_merge(base, cur, f->doc);
	json_object_put(cur);
	json_object_put(base);
	if (!merged || (f->force && bridge_overlay(merged, f->force) < 0)) {
		json_object_put(merged);
		return log_error_errno(-ENOMEM, "out of memory");
	}
	text = format_doc(merged, f->fmt);
	json_object_put(merged);
	if (!text)
		return log_error_errno(-ENOMEM, "out of memory");
	if ((r = write_atomic(dfd, name, text)) < 0)
		return log_error_errno(r, "cannot write ~/%s in the sandbox home: %m", f->rel);
	/* what aisb derived from the host this time: the next run's base */
	if (bdfd >= 0) {
		if (!(btext = format_doc(f->doc, f->fmt)))
			return log_error_errno(-ENOMEM, "out of memory");
		if ((r = write_atomic(bdfd, name, btext)) < 0)
			return log_error_errno(r, "cannot write the bridge's copy of ~/%s: %m", f->rel);
	}
	return 0;
}

int bridge_apply(const struct aisb_plan *p, const struct aisb_session *ss)
{
	const struct bridge_plan *b = p->bridge;
	_cleanup_free_ char *rootpath = NULL, *basepath = NULL;
	_cleanup_close_ int root = -1, basefd = -1;
	int r;

	if (!b || !b->res.n_files)
		return 0;
	if (ss->home_src) {
		const char *hn = strrchr(ss->home_src, '/');
		/* The copies of what aisb wrote live beside the homes, out of the sandbox's reach. */
		if (asprintf(&basepath, "%s/bridge/%s", ss->state_dir, hn ? hn + 1 : "default") < 0)
			return -ENOMEM;
		if ((r = mkdir_p(basepath, 0700)) < 0)
			return log_error_errno(r, "cannot create '%s': %m", basepath);
		basefd = open(basepath, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		root = open(ss->home_src, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (basefd < 0 || root < 0)
			return log_error_errno(-errno, "cannot open the sandbox home '%s': %m", ss->home_src);
	} else {
		/* Ephemeral home: the files go to the session dir, bound into the tmpfs home. */
		if (!(rootpath = path_join(ss->dir, "bridge-home")))
			return -ENOMEM;
		if (mkdir(rootpath, 0700) < 0 && errno != EEXIST)
			return log_error_errno(-errno, "cannot create '%s': %m", rootpath);
		root = open(rootpath, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (root < 0)
			return log_error_errno(-errno, "cannot open '%s': %m", rootpath);
	}
	for (size_t i = 0; i < b->res.n_files; i++) {
		const struct bridge_file *f = &b->res.files[i];
		if ((r = apply_file(root, basefd, f)) < 0)
			return r;
	}
	return 0;
}

void bridge_print_policy(const struct bridge_plan *b, FILE *f)
{
	if (!b)
		return;
	fprintf(f, "bridge=%s\n", b->harness);
	for (size_t i = 0; i < b->res.n_files; i++)
		fprintf(f, "bridge_file=~/%s\n", b->res.files[i].rel);
	for (size_t i = 0; i < b->res.n_ep; i++)
		fprintf(f, "bridge_endpoint=%s:%u\n", b->res.ep[i].host, (unsigned)b->res.ep[i].port);
	for (size_t i = 0; b->res.pass && b->res.pass[i]; i++)
		fprintf(f, "bridge_env=%s\n", b->res.pass[i]);
	for (size_t i = 0; b->key_via_gate && b->res.keys && b->res.keys[i]; i++)
		fprintf(f, "bridge_key_via_gate=%s\n", b->res.keys[i]);
}

void bridge_print(const struct bridge_plan *b, FILE *f)
{
	if (!b)
		return;
	if (!b->res.n_files) {
		fprintf(f, "bridge:     %s: not bridged\n", b->harness);
		return;
	}
	for (size_t i = 0; i < b->res.n_files; i++)
		fprintf(f, "bridge:     %s: ~/%s (rewritten from the host config, merged per key)\n", b->harness,
			b->res.files[i].rel);
	for (size_t i = 0; i < b->res.n_ep; i++)
		fprintf(f, "bridge:     %s: model endpoint %s:%u (%s)\n", b->harness, b->res.ep[i].host,
			(unsigned)b->res.ep[i].port, b->res.ep[i].origin);
	if (b->key_via_gate && b->res.keys && *b->res.keys) {
		char line[1024];

		key_line(b, line, sizeof(line));
		fprintf(f, "bridge:     %s\n", line);
	}
}
