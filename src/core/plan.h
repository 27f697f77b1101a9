/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plan.h — the immutable sandbox plan and the settings it is resolved from.
 *
 * Settings are what the user asked for, merged from defaults < config < AISB_* environment <
 * flags. The plan is what will be done: every path checked, every env value resolved, every
 * refusal already made. Nothing after clone() parses untrusted input; the code inside the
 * namespaces only executes a plan.
 *
 * The plan is the core's vocabulary: it lives below the CLI, which builds it (cli/resolve.c), and
 * src/ns, src/net, src/agents... read it without including a src/cli header (tests/lint/layers.sh).
 */
#ifndef AISB_CORE_PLAN_H
#define AISB_CORE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/plan-limits.h"
#include "core/session.h"

enum net_mode { NET_NONE, NET_ALLOW, NET_FULL, NET_MODE_MAX };

struct net_plan; /* net/netplan.h */
struct bridge_plan; /* agents/bridge.h */
struct workspace_plan; /* below; carried out by workspace/workspace.h */
enum rootfs_kind { ROOTFS_HOST, ROOTFS_IMAGE, ROOTFS_KIND_MAX };

/* Where a setting came from; used for error messages and tests of precedence. */
enum setting_source { SRC_DEFAULT, SRC_CONFIG, SRC_PROJECT, SRC_ENV, SRC_FLAG, SRC_MAX };

/* The rows the harness table (agents/harness.h) may have: the size of the settings' per-harness
 * switches. harness.c asserts its table fits. */
#define PLAN_HARNESSES_MAX 8

struct aisb_settings {
	enum net_mode net;
	char *rootfs;         /* "host" */
	char *image;          /* image reference, or NULL */
	char *tls_verify;     /* --tls-verify value for the image's registry (cli/regflags.h), or NULL */
	char *cert_dir;       /* --cert-dir, or NULL */
	char **authfiles;     /* --authfile, in the order given */
	char *harness;        /* pi codex claude shell */
	char *workdir;        /* "auto" or an absolute path inside */
	bool no_cwd;
	bool read_only;
	bool writable_git;
	bool container_proc;  /* --container-proc: a masked /proc is bound instead (threat-model) */
	bool ephemeral_home;
	bool no_agents;
	char *agents_dir;     /* NULL: $HOME/.agents */
	bool allow_ptrace;
	bool keep;
	bool tty_passthrough;  /* relay terminal control sequences unfiltered (ns/ttyfilter.h) */
	bool accept_unenforced_limits; /* no warning when default limits cannot be enforced */
	bool ephemeral;       /* image upper on tmpfs */
	char **mounts;        /* SRC[:DST][:ro|:rw] */
	char **envs;          /* NAME or NAME=VALUE */
	char **env_files;
	char **allows;        /* network allow entries (issue 3) */
	char **allow_files;
	char **add_hosts;     /* NAME=IP */
	char **publish;       /* [ADDR:]HOSTPORT:PORT */
	char **allow_host_ports;
	char *proxy;          /* upstream HOST:PORT */
	char *memory;         /* limits (issue 5) */
	char *pids;
	char *cpus;
	char *home;           /* --home NAME: "default" (NULL), "project", or a name */
	char **harness_from;  /* --harness-from DIR: read-only, DIR/bin first on PATH */
	bool quiet;           /* no informational notices */
	char *pi_token_env;   /* the harness config bridges (agents/bridge.h) */
	bool no_pi_token_env;
	char **key_via_gate;  /* harnesses whose key stays outside: the gate adds it (net/gate.h) */
	char *thinking;       /* pi's level, "host", or NULL: xhigh */
	/* [i]: the bridge of harness_at(i) is off, by its row's switch (--no-pi-config, ...) */
	bool no_harness_config[PLAN_HARNESSES_MAX];
	char *workspace;      /* "bind" (NULL) or "clone" (workspace/workspace.h) */
	char *untracked;      /* clone: "none" (NULL) or "copy" */
	char *target;         /* clone: where commits are imported: NULL (aisb/<id>), current, BRANCH */
	bool import_uncommitted; /* clone: uncommitted work imported as a checkpoint commit */
	bool review;             /* clone: the import asks before it publishes */
	/* flag-only */
	bool shell;
	bool strict_args;
	bool dry_run;
	bool print_policy;
	bool print_ruleset;
	bool help;
	bool version;
	int verbose;
	/* the command: harness arguments, or the `--` command */
	char **harness_args;
	char **command;       /* non-NULL when `--` was given */
	enum setting_source net_source;
};

struct plan_mount {
	char *src;     /* host path, checked */
	char *dst;     /* path inside */
	bool ro;
	bool is_dir;
};

struct plan_env {
	char *name;
	char *value;
	bool secret;   /* came from --env / --env-file: never printed */
	bool placeholder; /* --key-via-gate: a placeholder key, not the key (ns/scrub.c names it so) */
};

struct aisb_plan {
	/* identity */
	uid_t host_uid, host_gid;
	/* the kernel ids the sandbox's processes run as: the caller's, or for a root caller whose
	 * bind sources could be idmapped, USERNS_ROOT_RUN_ID (ns/mounts.h, mount_remap_plan()) */
	uid_t run_uid, run_gid;
	uid_t uid;             /* inside: 1000 */
	gid_t gid;
	const char *user;      /* "sandbox" */
	const char *home;      /* "/home/sandbox" */

	/* rootfs */
	enum rootfs_kind rootfs;
	char *image_ref;
	char *image_rootfs;    /* host path of the unpacked image: the overlay's read-only lower */
	bool image_ephemeral;  /* overlay upper on a tmpfs (not kept, or --ephemeral) instead of
				* <session>/overlay/upper (--keep) */
	bool image_no_overlay; /* test hook AISB_TEST_NO_OVERLAY=1: take the read-only fallback */
	uint64_t image_upper_max; /* test hook AISB_TEST_UPPER_SIZE: lowers the tmpfs upper's bound */

	/* project */
	char *project_src;     /* NULL with --no-cwd */
	char *project_dst;
	bool project_ro;
	bool project_relocated;/* mounted at /project because its own path is sandbox-owned */
	bool writable_git;
	char *cwd;             /* working directory inside */
	/* where a fresh /proc is refused (a container's masked /proc), bind the container's own
	 * (--container-proc): its processes, their argv, status and mountinfo become visible; the
	 * kernel still refuses their environ, memory, maps and fd targets (another user namespace).
	 * Never silently: said in the refusal, --print-policy, at start and at exit */
	bool container_proc;

	/* home */
	char *home_src;        /* persistent home on the host, NULL when ephemeral */
	char *home_name;       /* its name under homes/ (cli/home.h), NULL when ephemeral */
	char *harness_path;    /* --harness-from bin dirs, ':'-joined, put first on PATH */
	char *agents_src;      /* host ~/.agents, NULL when absent or --no-agents */
	struct bridge_plan *bridge; /* the harness's bridged config (agents/bridge.h), or NULL */
	struct workspace_plan *workspace; /* --workspace clone (workspace/workspace.h), or NULL */

	struct plan_mount *mounts;
	size_t n_mounts;

	struct plan_env *env;
	size_t n_env;

	/* the network part, its mode included: netplan_mode() (net/netplan.h) is the one home of
	 * the mode, which the plan does not copy */
	struct net_plan *netp;  /* policy, ruleset, pasta needs (net/netplan.h) */
	bool tls_ca;           /* --key-via-gate with an https:// endpoint: the session CA and the
				* bundle (run/session.h) are bound read-only at PLAN_TLS_CA and
				* PLAN_TLS_BUNDLE, and the trust variables name them */

	bool allow_ptrace;
	bool keep;
	bool tty_passthrough;

	char **argv;           /* the command to exec */

	/* limits (issue 5, ns/limits.h) */
	struct cgroup_limits limits;
	enum limits_mode limits_mode;
	bool limits_quiet;     /* accept_unenforced_limits: the degradation is not announced */
	bool limits_rlimit;    /* degraded: RLIMIT_NPROC = limits.pids_max inside */
	bool limits_pidns;     /* degraded, sandbox at kernel uid 0 (which RLIMIT_NPROC does not
				* bind): the pid namespace's pid_max bounds it (Linux 6.14+) */
	uint64_t limits_nproc; /* degraded: the soft RLIMIT_NPROC that gives inside, the caller's when
				* tighter (util/rlimit.h); 0: none is set */
	char limits_why[320];  /* why cgroups cannot enforce (degraded mode) */

	/* state */
	char *state_dir;       /* $XDG_STATE_HOME/aisb, as the environment names it (the session's
				* copy is canonical: core/session.h) */
	char *run_dir;         /* a tmpfs for the session's throw-away files: $XDG_RUNTIME_DIR/aisb,
				* else /dev/shm/aisb-UID; NULL: none (run/session.h) */
	int guard_verdict_fd;  /* > 2: aisb autophase's pipe for the git check's verdict (internal
				* AISB_GUARD_VERDICT_FD; written at the end, nothing when the check never ran) */
	/* The plan is a value: plan_resolve() writes it, every later stage takes it const. What a
	 * run makes is not the plan's: the session (id, dirs, the clone) is a struct aisb_session
	 * (core/session.h), the rest of the results (exit code, quarantine counts) live in
	 * run/sandbox.c's struct run and go to sessions.log through session_finish(). */
};

/* The project tree the sandbox gets: the clone its session made (--workspace clone,
 * core/session.h) or else the plan's project; NULL without one (--no-cwd). Does not log. */
static inline const char *plan_project_src(const struct aisb_plan *p, const struct aisb_session *ss)
{
	return ss && ss->project_src ? ss->project_src : p->project_src;
}

/* Frees what @s holds and zeroes it. Does not log. (A plan is freed by the resolver that made
 * it, which frees the net, bridge and workspace parts too: plan_free(), cli/resolve.h.) */
void settings_free(struct aisb_settings *s);

/* A getter for host environment variables (secure_getenv in production, a table in tests). */
typedef const char *(*env_getter)(const char *name);

/* `--workspace clone` (workspace/workspace.h): the clone the sandbox works on, and where its
 * commits go afterwards. */
struct workspace_plan {
	char *top;              /* the project's top-level directory on the host */
	char *rel;              /* the working directory below it ("" at the top) */
	char *base;             /* HEAD's commit when the plan was made */
	char *branch;           /* the branch HEAD was on, NULL when detached */
	char *object_format;    /* "sha1" or "sha256" */
	char *target;           /* NULL: aisb/<session>; "current"; or a branch name */
	bool untracked_copy;    /* --untracked copy */
	bool import_uncommitted;/* --import-uncommitted */
	bool review;            /* --review: the end-of-run import asks before it publishes */
	env_getter get;         /* the host environment the plan was resolved with */
};

/* "none" "allow" "full" */
const char *net_mode_to_string(enum net_mode m);
int net_mode_from_string(const char *s, enum net_mode *out);

/* Is @name a valid environment variable name? Does not log. */
bool plan_env_name_valid(const char *name);

/* Sets @name in the sandbox environment (replacing it); @secret values are never printed.
 * Return: 0 or -ENOMEM. Does not log. */
int plan_set_env(struct aisb_plan *p, const char *name, const char *value, bool secret);

/* Where the sandbox finds the session CA of --key-via-gate's https:// endpoints (its certificate
 * only, PEM) and the bundle of the host's roots and it (for $SSL_CERT_FILE, which replaces the
 * default roots); both read-only, in the sandbox's own /run. The session writes them under these
 * names next to its generated /etc files (p->etc_dir). */
#define PLAN_TLS_CA "/run/aisb/session-ca.pem"
#define PLAN_TLS_BUNDLE "/run/aisb/ca-bundle.pem"
#define PLAN_TLS_CA_NAME "session-ca.pem"
#define PLAN_TLS_BUNDLE_NAME "ca-bundle.pem"

/* The sandbox's home inside; it and every path that looks like it are reserved. */
#define PLAN_SANDBOX_HOME "/home/sandbox"

/* Is @path one the sandbox itself owns (system dirs, /tmp, /home, ...)? Nothing of the user's is
 * mounted over or under such a path. Does not log. */
bool plan_path_is_reserved(const char *path);

/* Where the project appears inside: its own path, or /project when that is reserved.
 * @workdir is "auto" or an absolute path. Logs on failure. */
int plan_project_dst(const char *cwd, const char *workdir, char **dst, bool *relocated);

/* The caller's home: $HOME when absolute, else the passwd entry. Caller frees; NULL if none.
 * Does not log. */
char *plan_host_home(env_getter get);

/* The plan as JSON text (for the session dir), without secret values; @net is its network mode
 * (netplan_mode(): the net part, which the core cannot read, keeps it); @ss the session it is
 * written for (its id, etc dir and canonical home), or NULL. Caller frees. Does not log. */
char *plan_to_json(const struct aisb_plan *p, enum net_mode net, const struct aisb_session *ss);

#endif
