// SPDX-License-Identifier: GPL-2.0-or-later
/* args.c — option table, flag parser, config file and AISB_* environment */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/harness.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/regflags.h"
#include "util/log.h"
#include "util/util.h"

enum opt_kind {
	OPT_BOOL,  /* flag without value; config/env value true/false */
	OPT_VALUE, /* one value; later sources override */
	OPT_LIST,  /* repeatable; all sources accumulate */
	OPT_KIND_MAX,
};

enum opt_id {
	OPT_NET,
	OPT_ROOTFS,
	OPT_IMAGE,
	OPT_HARNESS,
	OPT_WORKDIR,
	OPT_NO_CWD,
	OPT_READ_ONLY,
	OPT_WRITABLE_GIT,
	OPT_CONTAINER_PROC,
	OPT_EPHEMERAL_HOME,
	OPT_NO_AGENTS,
	OPT_AGENTS_DIR,
	OPT_ALLOW_PTRACE,
	OPT_KEEP,
	OPT_TTY_PASSTHROUGH,
	OPT_EPHEMERAL,
	OPT_ACCEPT_UNENFORCED_LIMITS,
	OPT_MOUNT,
	OPT_ENV,
	OPT_ENV_FILE,
	OPT_ALLOW,
	OPT_ALLOW_FILE,
	OPT_ADD_HOST,
	OPT_PUBLISH,
	OPT_ALLOW_HOST_PORT,
	OPT_PROXY,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPUS,
	OPT_HOME,
	OPT_HARNESS_FROM,
	OPT_QUIET,
	OPT_PI_TOKEN_ENV,     /* the harness config bridges (agents/bridge.h) */
	OPT_NO_PI_TOKEN_ENV,
	OPT_KEY_VIA_GATE,
	OPT_THINKING,
	OPT_NO_HARNESS_CONFIG, /* one per harness, from its row (agents/harness.h) */
	OPT_WORKSPACE,        /* clone workspaces (workspace/workspace.h) */
	OPT_UNTRACKED,
	OPT_TARGET,
	OPT_IMPORT_UNCOMMITTED,
	OPT_REVIEW,
	/* flag-only below */
	OPT_SHELL,
	OPT_STRICT_ARGS,
	OPT_DRY_RUN,
	OPT_PRINT_POLICY,
	OPT_PRINT_RULESET,
	OPT_HELP,
	OPT_VERSION,
	OPT_VERBOSE,
	OPT_HARNESS_ARGS,
	OPT_TLS_VERIFY,       /* --image's registry (cli/regflags.h) */
	OPT_CERT_DIR,
	OPT_AUTHFILE,
	OPT_ID_MAX,
};

struct opt_def {
	const char *flag;  /* without the leading "--" */
	const char *key;   /* config key and AISB_<KEY>; NULL: flag only */
	enum opt_kind kind;
	enum opt_id id;
	const char *arg;   /* metavar for help */
	const char *help;
};

/* The one table of options (read through opt_table()). Defaults live in args_defaults(). */
static const struct opt_def opt_rows[] = {
	{ "net", "net", OPT_VALUE, OPT_NET, "MODE", "network: none, allow, full" },
	{ "allow", "allow", OPT_LIST, OPT_ALLOW, "ENTRY", "allow a destination (name, *.name, name:port, IP, CIDR)" },
	{ "allow-file", "allow_file", OPT_LIST, OPT_ALLOW_FILE, "FILE", "allow entries from FILE, one per line" },
	{ "add-host", "add_host", OPT_LIST, OPT_ADD_HOST, "NAME=IP", "pin NAME to IP for the gate" },
	{ "allow-host-port", "allow_host_port", OPT_LIST, OPT_ALLOW_HOST_PORT, "PORT", "reach host 127.0.0.1:PORT as host.aisb.internal:PORT" },
	{ "publish", "publish", OPT_LIST, OPT_PUBLISH, "[ADDR:]HOSTPORT:PORT", "publish a sandbox port on the host" },
	{ "proxy", "proxy", OPT_VALUE, OPT_PROXY, "HOST:PORT", "chain allowed connections through an upstream proxy" },
	{ "rootfs", "rootfs", OPT_VALUE, OPT_ROOTFS, "host", "root filesystem source" },
	{ "image", "image", OPT_VALUE, OPT_IMAGE, "REF", "run on an OCI image from the store" },
	{ "ephemeral", "ephemeral", OPT_BOOL, OPT_EPHEMERAL, NULL, "image writes go to a tmpfs, also with --keep" },
	{ "tls-verify", NULL, OPT_BOOL, OPT_TLS_VERIFY, NULL, "--tls-verify=false: --image's registry without TLS checks (as pull)" },
	{ "cert-dir", NULL, OPT_VALUE, OPT_CERT_DIR, "DIR", "trust DIR/*.crt for --image's registry (as pull)" },
	{ "authfile", NULL, OPT_LIST, OPT_AUTHFILE, "FILE", "registry credentials for --image, tried first (as pull)" },
	{ "harness", "harness", OPT_VALUE, OPT_HARNESS, "NAME", "the harness (%H) or shell (default pi)" },
	{ "workdir", "workdir", OPT_VALUE, OPT_WORKDIR, "PATH", "where the project appears inside (default auto)" },
	{ "no-cwd", "no_cwd", OPT_BOOL, OPT_NO_CWD, NULL, "do not mount the current directory" },
	{ "read-only", "read_only", OPT_BOOL, OPT_READ_ONLY, NULL, "mount the project read-only" },
	{ "writable-git", "writable_git", OPT_BOOL, OPT_WRITABLE_GIT, NULL, "let the sandbox write .git/hooks and .git/config" },
	{ "container-proc", "container_proc", OPT_BOOL, OPT_CONTAINER_PROC, NULL, "where /proc is masked, bind the container's (its processes and argv visible)" },
	{ "mount", "mount", OPT_LIST, OPT_MOUNT, "SRC[:DST][:ro|:rw]", "bind a host path (read-only unless :rw)" },
	{ "ephemeral-home", "ephemeral_home", OPT_BOOL, OPT_EPHEMERAL_HOME, NULL, "home is a tmpfs, not persistent" },
	{ "home", "home", OPT_VALUE, OPT_HOME, "NAME", "persistent home: default, project or a NAME (aisb home)" },
	{ "harness-from", "harness_from", OPT_LIST, OPT_HARNESS_FROM, "DIR", "a harness's install dir, read-only, DIR/bin first on PATH" },
	{ "no-agents", "no_agents", OPT_BOOL, OPT_NO_AGENTS, NULL, "do not mount ~/.agents" },
	{ "agents-dir", "agents_dir", OPT_VALUE, OPT_AGENTS_DIR, "DIR", "mount DIR read-only as ~/.agents" },
	{ "env", "env", OPT_LIST, OPT_ENV, "NAME[=VALUE]", "pass a variable (NAME takes the host value)" },
	{ "env-file", "env_file", OPT_LIST, OPT_ENV_FILE, "FILE", "pass NAME=VALUE lines from a 0600 file" },
	{ "memory", "memory", OPT_VALUE, OPT_MEMORY, "SIZE", "memory limit" },
	{ "pids", "pids", OPT_VALUE, OPT_PIDS, "N", "process limit" },
	{ "cpus", "cpus", OPT_VALUE, OPT_CPUS, "X", "cpu limit" },
	{ "accept-unenforced-limits", "accept_unenforced_limits", OPT_BOOL, OPT_ACCEPT_UNENFORCED_LIMITS, NULL, "do not warn when the default limits cannot be enforced here" },
	{ "pi-token-env", "pi_token_env", OPT_VALUE, OPT_PI_TOKEN_ENV, "NAME", "pi's provider keys become $NAME (default AI_API_TOKEN), passed by name" },
	{ "no-pi-token-env", "no_pi_token_env", OPT_BOOL, OPT_NO_PI_TOKEN_ENV, NULL, "pass no key variable to pi (an endpoint without a key)" },
	{ "key-via-gate", "key_via_gate", OPT_LIST, OPT_KEY_VIA_GATE, "HARNESS", "HARNESS (%H) gets a placeholder key; the gate adds the real one for its http:// endpoint" },
	{ "thinking", "thinking", OPT_VALUE, OPT_THINKING, "LEVEL|host", "pi's thinking level (off minimal low medium high xhigh; default xhigh)" },
	/* here: each harness's --no-NAME-config, made from its row (opt_table()) */
	{ NULL, NULL, OPT_BOOL, OPT_NO_HARNESS_CONFIG, NULL, NULL },
	{ "workspace", "workspace", OPT_VALUE, OPT_WORKSPACE, "bind|clone", "clone: the sandbox works on its own clone; new commits come back as a branch" },
	{ "untracked", "untracked", OPT_VALUE, OPT_UNTRACKED, "none|copy", "clone: copy the untracked, not ignored files in too (never imported)" },
	{ "target", "target", OPT_VALUE, OPT_TARGET, "BRANCH|current", "clone: import as BRANCH (default aisb/<session>); current fast-forwards the checked-out branch" },
	{ "import-uncommitted", "import_uncommitted", OPT_BOOL, OPT_IMPORT_UNCOMMITTED, NULL, "clone: also import uncommitted work, as one checkpoint commit" },
	{ "review", "review", OPT_BOOL, OPT_REVIEW, NULL, "clone: show what the import would publish and publish only when you confirm" },
	{ "allow-ptrace", "allow_ptrace", OPT_BOOL, OPT_ALLOW_PTRACE, NULL, "allow ptrace and process_vm_* inside, and a writable /proc" },
	{ "keep", "keep", OPT_BOOL, OPT_KEEP, NULL, "keep the session directory after exit" },
	{ "quiet", "quiet", OPT_BOOL, OPT_QUIET, NULL, "no informational notices; warnings stay" },
	{ "tty-passthrough", "tty_passthrough", OPT_BOOL, OPT_TTY_PASSTHROUGH, NULL,
	  "escape hatch: relay every terminal control sequence (clipboard, title, links...) unfiltered" },
	{ "shell", NULL, OPT_BOOL, OPT_SHELL, NULL, "run an interactive shell instead of the harness" },
	{ "strict-args", NULL, OPT_BOOL, OPT_STRICT_ARGS, NULL, "an unknown flag is an error" },
	{ "dry-run", NULL, OPT_BOOL, OPT_DRY_RUN, NULL, "print the plan (secrets redacted); start nothing" },
	{ "print-policy", NULL, OPT_BOOL, OPT_PRINT_POLICY, NULL, "print the effective policy as key=value" },
	{ "print-ruleset", NULL, OPT_BOOL, OPT_PRINT_RULESET, NULL, "print the nft ruleset; start nothing" },
	{ "verbose", NULL, OPT_BOOL, OPT_VERBOSE, NULL, "more diagnostics" },
	{ "help", NULL, OPT_BOOL, OPT_HELP, NULL, "this help" },
	{ "version", NULL, OPT_BOOL, OPT_VERSION, NULL, "print aisb's version, then the harness's" },
	{ "harness-args", NULL, OPT_BOOL, OPT_HARNESS_ARGS, NULL, "the rest goes to the harness, even --help" },
};

/* The table the parser, the config file, the environment, completion and --help read: opt_rows[]
 * with its OPT_NO_HARNESS_CONFIG row replaced by one switch per row of the harness table
 * (agents/harness.h), so that adding a harness adds its flag. A switch's flag is the row's
 * no_config_flag ("--no-pi-config"), its config key and AISB_ variable the same with '_'
 * (no_pi_config, AISB_NO_PI_CONFIG), its help the row's host files. */
static struct {
	struct opt_def all[ELEMENTSOF(opt_rows) - 1 + PLAN_HARNESSES_MAX];
	char key[PLAN_HARNESSES_MAX][64];
	char help[PLAN_HARNESSES_MAX][256];
	size_t n;
} table;

/* Appends @h's switch to the table. A row without a --no-NAME-config switch gets none (and
 * fails tests/unit/test-harness-flags). */
static void table_add_switch(size_t k, const struct harness *h)
{
	const char *flag = h->no_config_flag;
	char *key = table.key[k], *help = table.help[k];
	size_t o;

	if (!flag || strncmp(flag, "--no-", 5) != 0 || strlen(flag) >= sizeof(table.key[k]))
		return;
	flag += 2;
	for (size_t i = 0; flag[i]; i++)
		key[i] = flag[i] == '-' ? '_' : flag[i];
	key[strlen(flag)] = '\0';
	o = (size_t)snprintf(help, sizeof(table.help[k]), "do not bridge");
	for (size_t i = 0; i < HARNESS_FILES_MAX && h->files[i].rel && o < sizeof(table.help[k]); i++)
		o += (size_t)snprintf(help + o, sizeof(table.help[k]) - o, "%s ~/%s", i ? " and" : "", h->files[i].rel);
	if (o < sizeof(table.help[k]))
		snprintf(help + o, sizeof(table.help[k]) - o, " into the sandbox home");
	table.all[table.n++] = (struct opt_def){ flag, key, OPT_BOOL, OPT_NO_HARNESS_CONFIG, NULL, help };
}

/* The row number of the harness whose switch @o is. */
static size_t switch_harness(const struct opt_def *o)
{
	size_t k;

	for (k = 0; harness_at(k); k++)
		if (harness_at(k)->no_config_flag && streq(harness_at(k)->no_config_flag + 2, o->flag))
			break;
	assert(harness_at(k)); /* opt_table() made @o from a row */
	return k;
}

static const struct opt_def *opt_table(size_t *n)
{
	if (!table.n)
		for (size_t i = 0; i < ELEMENTSOF(opt_rows); i++) {
			if (opt_rows[i].id != OPT_NO_HARNESS_CONFIG) {
				table.all[table.n++] = opt_rows[i];
				continue;
			}
			for (size_t k = 0; harness_at(k); k++)
				table_add_switch(k, harness_at(k));
		}
	*n = table.n;
	return table.all;
}

static int set_str(char **dst, const char *v)
{
	char *c = strdup(v);
	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

static int parse_bool(const char *v, bool *out)
{
	if (streq(v, "1") || streq(v, "true") || streq(v, "yes") || streq(v, "on"))
		*out = true;
	else if (streq(v, "0") || streq(v, "false") || streq(v, "no") || streq(v, "off"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static bool *bool_slot(struct aisb_settings *s, const struct opt_def *o)
{
	switch (o->id) {
	case OPT_NO_CWD: return &s->no_cwd;
	case OPT_READ_ONLY: return &s->read_only;
	case OPT_WRITABLE_GIT: return &s->writable_git;
	case OPT_CONTAINER_PROC: return &s->container_proc;
	case OPT_EPHEMERAL_HOME: return &s->ephemeral_home;
	case OPT_NO_AGENTS: return &s->no_agents;
	case OPT_ALLOW_PTRACE: return &s->allow_ptrace;
	case OPT_KEEP: return &s->keep;
	case OPT_QUIET: return &s->quiet;
	case OPT_TTY_PASSTHROUGH: return &s->tty_passthrough;
	case OPT_EPHEMERAL: return &s->ephemeral;
	case OPT_ACCEPT_UNENFORCED_LIMITS: return &s->accept_unenforced_limits;
	case OPT_NO_PI_TOKEN_ENV: return &s->no_pi_token_env;
	case OPT_NO_HARNESS_CONFIG: return &s->no_harness_config[switch_harness(o)];
	case OPT_IMPORT_UNCOMMITTED: return &s->import_uncommitted;
	case OPT_REVIEW: return &s->review;
	case OPT_SHELL: return &s->shell;
	case OPT_STRICT_ARGS: return &s->strict_args;
	case OPT_DRY_RUN: return &s->dry_run;
	case OPT_PRINT_POLICY: return &s->print_policy;
	case OPT_PRINT_RULESET: return &s->print_ruleset;
	case OPT_HELP: return &s->help;
	case OPT_VERSION: return &s->version;
	default: return NULL;
	}
}

static char **str_slot(struct aisb_settings *s, enum opt_id id)
{
	switch (id) {
	case OPT_ROOTFS: return &s->rootfs;
	case OPT_IMAGE: return &s->image;
	case OPT_HARNESS: return &s->harness;
	case OPT_WORKDIR: return &s->workdir;
	case OPT_AGENTS_DIR: return &s->agents_dir;
	case OPT_PROXY: return &s->proxy;
	case OPT_MEMORY: return &s->memory;
	case OPT_PIDS: return &s->pids;
	case OPT_CPUS: return &s->cpus;
	case OPT_HOME: return &s->home;
	case OPT_PI_TOKEN_ENV: return &s->pi_token_env;
	case OPT_THINKING: return &s->thinking;
	case OPT_CERT_DIR: return &s->cert_dir;
	case OPT_WORKSPACE: return &s->workspace;
	case OPT_UNTRACKED: return &s->untracked;
	case OPT_TARGET: return &s->target;
	default: return NULL;
	}
}

static char ***list_slot(struct aisb_settings *s, enum opt_id id)
{
	switch (id) {
	case OPT_MOUNT: return &s->mounts;
	case OPT_ENV: return &s->envs;
	case OPT_ENV_FILE: return &s->env_files;
	case OPT_ALLOW: return &s->allows;
	case OPT_ALLOW_FILE: return &s->allow_files;
	case OPT_ADD_HOST: return &s->add_hosts;
	case OPT_PUBLISH: return &s->publish;
	case OPT_ALLOW_HOST_PORT: return &s->allow_host_ports;
	case OPT_HARNESS_FROM: return &s->harness_from;
	case OPT_KEY_VIA_GATE: return &s->key_via_gate;
	case OPT_AUTHFILE: return &s->authfiles;
	default: return NULL;
	}
}

/* Validates values whose grammar is known here; deeper checks happen in plan resolution.
 * @what names the source for the message. Logs on failure. */
static int apply(struct aisb_settings *s, const struct opt_def *o, const char *v,
		 enum setting_source src, const char *what)
{
	switch (o->kind) {
	case OPT_BOOL: {
		bool b = true;
		if (o->id == OPT_TLS_VERIFY) /* pull's grammar: bare, =true or =false */
			return regflag_tls_verify(v, &b) < 0 ? -EINVAL : set_str(&s->tls_verify, b ? "true" : "false");
		if (v && parse_bool(v, &b) < 0)
			return log_error("%s: '%s' takes true or false, not '%s'", what, o->key ? o->key : o->flag, v);
		if (o->id == OPT_VERBOSE) {
			s->verbose += b;
			return 0;
		}
		*bool_slot(s, o) = b;
		return 0;
	}
	case OPT_VALUE:
		if (o->id == OPT_NET) {
			if (net_mode_from_string(v, &s->net) < 0)
				return log_error("%s: invalid network mode '%s' (use none, allow or full)", what, v);
			s->net_source = src;
			return 0;
		}
		if (o->id == OPT_HARNESS && !harness_find(v) && !streq(v, "shell"))
			return log_error("%s: unknown harness '%s' (use %s, or shell)", what, v, harness_names("or"));
		if (o->id == OPT_HOME && !args_home_name_valid(v))
			return log_error("%s: invalid home name '%s' (default, project, or letters, digits, '.', '_', '-'; "
					 "at most 64, not starting with '.')", what, v);
		if (o->id == OPT_WORKSPACE && !(streq(v, "bind") || streq(v, "clone")))
			return log_error("%s: unknown workspace '%s' (use bind or clone)", what, v);
		/* a project may ask for the clone (it narrows what the sandbox sees), never undo the
		 * user's own workspace = clone */
		if (o->id == OPT_WORKSPACE && src == SRC_PROJECT && !streq(v, "clone"))
			return log_error("%s: a project policy may set workspace = clone only", what);
		if (o->id == OPT_UNTRACKED && !(streq(v, "none") || streq(v, "copy")))
			return log_error("%s: unknown --untracked '%s' (use none or copy)", what, v);
		if (o->id == OPT_ROOTFS && !streq(v, "host"))
			return log_error("%s: unknown rootfs '%s' (use host, or --image REF)", what, v);
		if (!*v)
			return log_error("%s: '%s' needs a value", what, o->key ? o->key : o->flag);
		return set_str(str_slot(s, o->id), v);
	case OPT_LIST:
		if (!*v)
			return log_error("%s: '%s' needs a value", what, o->key ? o->key : o->flag);
		return strv_push(list_slot(s, o->id), v) < 0 ? -ENOMEM : 0;
	default:
		return -EINVAL;
	}
}

bool args_home_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > 64 || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)name[i]) || name[i] == '.' || name[i] == '_' || name[i] == '-'))
			return false;
	return true;
}

int args_defaults(struct aisb_settings *s)
{
	memset(s, 0, sizeof(*s));
	/* allow is the default (design 6); with nothing allowed and no explicit --net it runs as
	 * none (netplan_resolve), an explicit --net allow with an empty allowlist is exit 78. */
	s->net = NET_ALLOW;
	s->net_source = SRC_DEFAULT;
	if (set_str(&s->rootfs, "host") < 0 || set_str(&s->harness, "pi") < 0 ||
	    set_str(&s->workdir, "auto") < 0)
		return -ENOMEM;
	return 0;
}

static const struct opt_def *find_key(const char *key)
{
	size_t n;
	const struct opt_def *t = opt_table(&n);

	for (size_t i = 0; i < n; i++)
		if (t[i].key && streq(t[i].key, key))
			return &t[i];
	return NULL;
}

static const struct opt_def *find_flag(const char *flag, size_t len)
{
	size_t n;
	const struct opt_def *t = opt_table(&n);

	for (size_t i = 0; i < n; i++)
		if (strlen(t[i].flag) == len && strncmp(t[i].flag, flag, len) == 0)
			return &t[i];
	return NULL;
}

static char *strip(char *s)
{
	char *e;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* Keys a project's .aisb/config may set: egress entries, passed variables, the harness and the
 * limits, and workspace = clone (which only narrows). Nothing that widens mounts, exposes host files (allow_file, env_file, agents_dir),
 * reaches host services (allow_host_port, add_host), or weakens enforcement (net, ptrace, git). */
static const char *const project_keys[] = { "allow", "env", "harness", "memory", "pids", "cpus", "workspace" };

static bool is_project_key(const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(project_keys); i++)
		if (streq(project_keys[i], key))
			return true;
	return false;
}

static int apply_config_text(struct aisb_settings *s, const char *text, const char *origin, bool project)
{
	_cleanup_free_ char *copy = strdup(text);
	char *line, *save = NULL;
	unsigned lineno = 0;
	char *p;

	if (!copy)
		return -ENOMEM;
	/* strtok is banned; split by hand so empty lines keep their numbers. */
	for (line = copy; line; line = save) {
		char what[512];
		const struct opt_def *o;
		char *eq, *key, *val;
		int r;

		p = strchr(line, '\n');
		save = p ? p + 1 : NULL;
		if (p)
			*p = 0;
		lineno++;
		line = strip(line);
		if (!*line || *line == '#')
			continue;
		snprintf(what, sizeof(what), "%s:%u", origin, lineno);
		eq = strchr(line, '=');
		if (!eq)
			return log_error("%s: expected 'key = value'", what);
		*eq = 0;
		key = strip(line);
		val = strip(eq + 1);
		/* `aisb autophase`'s key (cmd-autophase.c reads it with args_config_lookup()) */
		if (!project && streq(key, "autophase_launcher"))
			continue;
		o = find_key(key);
		if (!o)
			return log_error("%s: unknown key '%s'", what, key);
		if (project && !is_project_key(key))
			return log_error("%s: key '%s' is not allowed in a project policy (only allow, env, harness, "
					 "memory, pids, cpus, workspace): a repository cannot widen mounts or weaken enforcement; "
					 "put it in your own config or on the command line", what, key);
		r = apply(s, o, val, project ? SRC_PROJECT : SRC_CONFIG, what);
		if (r < 0)
			return r;
	}
	return 0;
}

int args_config_lookup(const char *text, const char *key, char **out)
{
	_cleanup_free_ char *copy = strdup(text);
	char *line, *next;

	*out = NULL;
	if (!copy)
		return -ENOMEM;
	for (line = copy; line; line = next) {
		char *eq, *nl = strchr(line, '\n');
		next = nl ? nl + 1 : NULL;
		if (nl)
			*nl = 0;
		line = strip(line);
		eq = strchr(line, '=');
		if (!*line || *line == '#' || !eq)
			continue;
		*eq = 0;
		if (!streq(strip(line), key))
			continue;
		free(*out); /* the last one wins, as for every key */
		*out = strdup(strip(eq + 1));
		if (!*out)
			return -ENOMEM;
	}
	return *out ? 1 : 0;
}

int args_apply_config(struct aisb_settings *s, const char *text, const char *origin)
{
	return apply_config_text(s, text, origin, false);
}

int args_apply_project(struct aisb_settings *s, const char *text, const char *origin)
{
	return apply_config_text(s, text, origin, true);
}

int args_apply_env(struct aisb_settings *s, env_getter get)
{
	size_t n;
	const struct opt_def *opts = opt_table(&n);

	for (size_t i = 0; i < n; i++) {
		char name[64], what[80];
		const char *v;
		size_t j;
		int r;

		if (!opts[i].key)
			continue;
		snprintf(name, sizeof(name), "AISB_%s", opts[i].key);
		for (j = 5; name[j]; j++)
			name[j] = (char)toupper((unsigned char)name[j]);
		v = get(name);
		if (!v)
			continue;
		snprintf(what, sizeof(what), "environment %s", name);
		if (opts[i].kind == OPT_LIST) {
			/* Lists in the environment are comma-separated. */
			_cleanup_free_ char *copy = strdup(v);
			char *item = copy, *next;
			if (!copy)
				return -ENOMEM;
			for (; item; item = next) {
				next = strchr(item, ',');
				if (next)
					*next++ = 0;
				item = strip(item);
				if (!*item)
					continue;
				r = apply(s, &opts[i], item, SRC_ENV, what);
				if (r < 0)
					return r;
			}
			continue;
		}
		r = apply(s, &opts[i], v, SRC_ENV, what);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- the alias rule's ambiguity (issue 26) ----
 *
 * `alias pi=aisb` hands everything from the first word that is not an aisb flag to the harness.
 * Two podman habits then start the agent with words meant for aisb: an unknown flag before a
 * `--` (`aisb --net none -v /tmp:/x -- make` ran `pi -v /tmp:/x -- make`), and a podman/docker
 * subcommand aisb does not have (`aisb rm x` started pi). Both are refused (78) with the aisb
 * spelling and the `--harness-args` way to mean the harness; a harness's own subcommands (codex
 * exec, claude rm) stay the harness's. */

/* podman/docker run flags that aisb spells otherwise (NULL: aisb has no such thing) */
static const struct podman_spelling {
	const char *word;
	const char *aisb;
} podman_flags[] = {
	{ "-v", "--mount SRC[:DST][:rw]" }, { "--volume", "--mount SRC[:DST][:rw]" },
	{ "-e", "--env NAME[=VALUE]" }, { "-w", "--workdir PATH" },
	{ "-p", "--publish [ADDR:]HOSTPORT:PORT" }, { "--network", "--net none|allow|full" },
	{ "-m", "--memory SIZE" }, { "--pids-limit", "--pids N" },
	{ "--entrypoint", "-- COMMAND" }, { "--rm", NULL }, { "-i", NULL }, { "-t", NULL }, { "-it", NULL },
	{ "-ti", NULL }, { "--interactive", NULL }, { "--tty", NULL }, { "--name", NULL }, { "-u", NULL },
	{ "--user", NULL }, { "--privileged", NULL }, { "--cap-add", NULL }, { "-d", NULL }, { "--detach", NULL },
};

/* podman's and docker's subcommands that aisb does not have (its own are in cli_commands[]) */
static const struct podman_spelling podman_commands[] = {
	{ "attach", NULL }, { "auto-update", NULL }, { "builder", "aisb build" }, { "buildx", "aisb build" },
	{ "checkpoint", NULL }, { "commit", "aisb build" }, { "compose", NULL }, { "config", NULL },
	{ "container", "aisb ps, aisb clean" }, { "context", NULL }, { "cp", "--mount SRC[:DST][:rw]" },
	{ "create", "aisb -- COMMAND" }, { "diff", NULL }, { "events", NULL },
	{ "exec", "aisb -- COMMAND (a new sandbox: aisb has no exec into a running one)" },
	{ "export", "aisb save" }, { "generate", NULL }, { "healthcheck", NULL }, { "help", "aisb --help" },
	{ "history", NULL }, { "image", "aisb images, aisb rmi" }, { "info", "aisb doctor" }, { "init", NULL },
	{ "kill", NULL }, { "kube", NULL }, { "login", "podman login (aisb reads its auth file)" },
	{ "logout", "podman logout" }, { "machine", NULL }, { "manifest", NULL }, { "mount", "--mount" },
	{ "network", "--net" }, { "node", NULL }, { "pause", NULL }, { "plugin", NULL }, { "pod", NULL },
	{ "port", "--publish" }, { "rename", NULL }, { "restart", NULL }, { "rm", "aisb clean" },
	{ "search", NULL }, { "secret", "--env-file" }, { "service", NULL }, { "stack", NULL },
	{ "start", "aisb -- COMMAND" }, { "stats", "aisb ps" }, { "stop", NULL }, { "swarm", NULL },
	{ "system", "aisb doctor, aisb clean" }, { "tag", NULL }, { "top", "aisb ps" }, { "unmount", NULL },
	{ "unpause", NULL }, { "unshare", NULL }, { "untag", "aisb rmi" }, { "version", "aisb --version" },
	{ "volume", "--mount" }, { "wait", NULL },
};

static const struct podman_spelling *spelling_find(const struct podman_spelling *t, size_t n, const char *w)
{
	size_t len = strcspn(w, "="); /* --network=none */

	for (size_t i = 0; i < n; i++)
		if (strlen(t[i].word) == len && strncmp(t[i].word, w, len) == 0)
			return &t[i];
	return NULL;
}

/* Refuses harness words @v (the rest after aisb's flags, not after --harness-args) that meant
 * aisb. Return: 0, or -EINVAL (exit 78). Logs on failure. */
static int check_alias_ambiguity(const struct aisb_settings *s, char *const *v)
{
	const struct podman_spelling *ps;
	const char *h = s->harness;

	if (!v[0])
		return 0;
	if (v[0][0] != '-' && !harness_has_subcommand(harness_find(h), v[0]) &&
	    (ps = spelling_find(podman_commands, ELEMENTSOF(podman_commands), v[0]))) {
		if (ps->aisb)
			return log_error("'%s' is a podman/docker command that aisb does not have and %s does not take: "
					 "nothing was started. aisb's nearest: %s; to give the word to %s, put "
					 "--harness-args before it", v[0], h, ps->aisb, h);
		return log_error("'%s' is a podman/docker command that aisb does not have and %s does not take: "
				 "nothing was started (see 'aisb --help'); to give the word to %s, put --harness-args "
				 "before it", v[0], h, h);
	}
	for (size_t i = 0; v[i] && !streq(v[i], "--"); i++) {
		size_t k;
		if (v[i][0] != '-')
			continue;
		for (k = i + 1; v[k] && !streq(v[k], "--"); k++)
			;
		if (!v[k])
			return 0; /* no '--': the harness's flags, as the alias rule says */
		ps = spelling_find(podman_flags, ELEMENTSOF(podman_flags), v[i]);
		if (ps && ps->aisb)
			return log_error("'%s' is not an aisb flag and a '--' follows it: nothing was started (%s would "
					 "have got both). podman's %s is aisb's %s; to give these words to %s, put "
					 "--harness-args before them", v[i], h, ps->word, ps->aisb, h);
		return log_error("'%s' is not an aisb flag and a '--' follows it: nothing was started (%s would have "
				 "got both; aisb's flags: aisb --help); to give these words to %s, put --harness-args "
				 "before them", v[i], h, h);
	}
	return 0;
}

int args_parse_flags(struct aisb_settings *s, int argc, char **argv)
{
	bool harness_args = false;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *name, *eq, *val = NULL;
		const struct opt_def *o;
		char what[128];
		int r;

		if (streq(a, "--")) {
			if (i + 1 >= argc)
				return log_error("'--' must be followed by a command"), -E2BIG;
			s->command = strv_copy(argv + i + 1);
			return s->command ? 0 : -ENOMEM;
		}
		if (strncmp(a, "--", 2) != 0 || !a[2])
			break; /* positional (or "-x"): harness arguments start here */
		name = a + 2;
		eq = strchr(name, '=');
		o = find_flag(name, eq ? (size_t)(eq - name) : strlen(name));
		if (!o) {
			if (s->strict_args)
				return log_error("unknown flag '%s' (--strict-args is set; use '--' before the command)", a), -E2BIG;
			break;
		}
		if (o->id == OPT_HARNESS_ARGS) {
			/* The shared-flags rule (docs/agents.md): everything after it is the harness's,
			 * --help, --version and codex's --image included. */
			i++;
			harness_args = true;
			break;
		}
		snprintf(what, sizeof(what), "--%s", o->flag);
		if (o->kind == OPT_BOOL) {
			if (eq)
				val = eq + 1;
		} else if (eq) {
			val = eq + 1;
		} else {
			if (i + 1 >= argc)
				return log_error("%s needs a value (%s)", what, o->arg), -E2BIG;
			val = argv[++i];
		}
		r = apply(s, o, val, SRC_FLAG, what);
		if (r < 0)
			return r;
	}
	if (!harness_args && check_alias_ambiguity(s, argv + i) < 0)
		return -EINVAL;
	s->harness_args = strv_copy(argv + i);
	return s->harness_args ? 0 : -ENOMEM;
}

int args_load(struct aisb_settings *s, int argc, char **argv, const char *config_path, env_getter get)
{
	return args_load_project(s, argc, argv, config_path, NULL, NULL, get);
}

int args_load_project(struct aisb_settings *s, int argc, char **argv, const char *config_path,
		      const char *project_text, const char *project_origin, env_getter get)
{
	int r = args_defaults(s);
	if (r < 0)
		return AISB_EXIT_FAILED;
	if (config_path) {
		_cleanup_free_ char *text = NULL;
		r = read_file_at(-100 /* AT_FDCWD */, config_path, 1 << 20, &text, NULL);
		if (r < 0 && r != -ENOENT) /* no config file is no config */
			return log_error_errno(r, "cannot read config '%s': %m", config_path), AISB_EXIT_POLICY;
		if (r >= 0 && args_apply_config(s, text, config_path) < 0)
			return AISB_EXIT_POLICY;
	}
	size_t proj_from = strv_length(s->allows), proj_to;
	if (project_text && args_apply_project(s, project_text, project_origin) < 0)
		return AISB_EXIT_POLICY;
	proj_to = strv_length(s->allows);
	if (args_apply_env(s, get) < 0)
		return AISB_EXIT_POLICY;
	r = args_parse_flags(s, argc, argv);
	if (r == -E2BIG)
		return AISB_EXIT_USAGE;
	if (r < 0)
		return AISB_EXIT_POLICY;
	/* `--net none` (or AISB_NET=none) asked for here wins over the project's allow entries,
	 * which are a standing policy rather than a request of this run. */
	if (s->net == NET_NONE && s->net_source > SRC_PROJECT && proj_to > proj_from) {
		for (size_t i = proj_from; i < proj_to; i++)
			free(s->allows[i]);
		memmove(s->allows + proj_from, s->allows + proj_to,
			(strv_length(s->allows + proj_to) + 1) * sizeof(char *));
	}
	return 0;
}

/* @o's help line, with "%H" replaced by the harnesses' names ("pi, codex, claude"). A static
 * buffer. Does not log. */
static const char *opt_help(const struct opt_def *o)
{
	static char buf[512];
	const char *m = strstr(o->help, "%H");
	size_t n;

	if (!m)
		return o->help;
	n = (size_t)snprintf(buf, sizeof(buf), "%.*s", (int)(m - o->help), o->help);
	for (size_t i = 0; harness_at(i) && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? ", " : "", harness_at(i)->name);
	if (n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - n, "%s", m + 2);
	return buf;
}

void args_print_help(const char *prog)
{
	size_t n;
	const struct opt_def *opts = opt_table(&n);

	printf("usage: %s [run] [SANDBOX FLAGS] [HARNESS ARGS...]\n"
	       "       %s [run] [SANDBOX FLAGS] -- COMMAND [ARGS...]\n\n"
	       "Runs a harness (pi by default) or COMMAND against the current directory with only\n"
	       "the project writable, no ambient environment, no capabilities and filtered network.\n"
	       "Sandbox flags are read until the first argument that is not one; the rest goes to\n"
	       "the harness. '--' replaces the harness with COMMAND.\n\nFlags:\n",
	       prog, prog);
	for (size_t i = 0; i < n; i++) {
		char left[64];
		snprintf(left, sizeof(left), "--%s%s%s", opts[i].flag, opts[i].arg ? " " : "",
			 opts[i].arg ? opts[i].arg : "");
		printf("  %-34s %s\n", left, opt_help(&opts[i]));
	}
	printf("\nConfig: $XDG_CONFIG_HOME/aisb/config ('key = value', keys as flags with '_');\n"
	       "environment AISB_<KEY> overrides it; flags override both.\n"
	       "Other commands: aisb COMMAND --help. Exit codes: the command's; 128+N for signal N;\n"
	       "125 aisb failed; 126 not executable; 127 not found; 77 enforcement; 78 policy.\n"
	       "\nShared flags (alias pi=aisb): --help, --version, --verbose and --image before the first\n"
	       "harness argument are aisb's; --version also prints the harness's. The harness gets its\n"
	       "own after --harness-args ('aisb --harness-args --help', as an alias 'pi --harness-args\n"
	       "--help'), or after its first argument ('pi -p hi --verbose'); single-dash flags (-h, -v)\n"
	       "are always the harness's. The harness's help: aisb --harness-args --help\n");
}

/* What each option's value is, for completion (cli/complete.c): only local state is offered. A
 * flag added to the table without a case here completes as free text. */
static enum cli_value opt_value(const struct opt_def *o, const char **choices)
{
	*choices = NULL;
	if (o->id == OPT_TLS_VERIFY) {
		*choices = "true false";
		return CLI_VALUE_CHOICE;
	}
	if (o->kind == OPT_BOOL)
		return CLI_VALUE_NONE;
	switch (o->id) {
	case OPT_NET: *choices = "none allow full"; return CLI_VALUE_CHOICE;
	case OPT_HARNESS: {
		static char names[256];

		snprintf(names, sizeof(names), "%s shell", harness_names(NULL));
		*choices = names;
		return CLI_VALUE_CHOICE;
	}
	case OPT_ROOTFS: *choices = "host"; return CLI_VALUE_CHOICE;
	case OPT_WORKSPACE: *choices = "bind clone"; return CLI_VALUE_CHOICE;
	case OPT_UNTRACKED: *choices = "none copy"; return CLI_VALUE_CHOICE;
	case OPT_IMAGE: return CLI_VALUE_IMAGE;
	case OPT_MOUNT: case OPT_WORKDIR: case OPT_AGENTS_DIR: case OPT_HARNESS_FROM: case OPT_CERT_DIR:
		return CLI_VALUE_DIR;
	case OPT_ENV_FILE: case OPT_ALLOW_FILE: case OPT_AUTHFILE: return CLI_VALUE_FILE;
	case OPT_ENV: return CLI_VALUE_ENV;
	case OPT_ALLOW: return CLI_VALUE_ALLOW;
	default: return CLI_VALUE_WORD;
	}
}

bool args_flag(size_t i, struct cli_flag *out)
{
	size_t n;
	const struct opt_def *opts = opt_table(&n);

	if (i >= n)
		return false;
	*out = (struct cli_flag){ .name = opts[i].flag };
	out->value = opt_value(&opts[i], &out->choices);
	out->optional_value = opts[i].id == OPT_TLS_VERIFY; /* "--tls-verify[=false]" */
	return true;
}

