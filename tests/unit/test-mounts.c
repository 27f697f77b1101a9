// SPDX-License-Identifier: GPL-2.0-or-later
/* test-mounts.c — the mount plan, op by op, and the exit-code mapping */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli/resolve.h"
#include "ns/cgroup.h"
#include "ns/mounts.h"
#include "run/sandbox.h"
#include "util/util.h"

static void base_plan(struct aisb_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->uid = 1000;
	p->gid = 1000;
	p->user = "sandbox";
	p->home = "/home/sandbox";
	p->project_src = strdup("/home/alice/proj");
	p->project_dst = strdup("/home/alice/proj");
	p->home_src = strdup("/home/alice/.local/state/aisb/homes/default");
}

static void base_facts(struct mount_host_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->lib_link[0] = strdup("usr/bin");  /* bin */
	f->lib_dir[1] = true;                /* sbin a real dir */
	f->lib_link[2] = strdup("usr/lib");  /* lib */
	f->has_opt = false;
	f->session_etc = strdup("/state/sessions/abc/etc");
	/* what mount_host_facts() takes from the session (core/session.h) for base_plan()'s plan */
	f->project_src = strdup("/home/alice/proj");
	f->home_src = strdup("/home/alice/.local/state/aisb/homes/default");
	f->bridge_home = strdup("/state/sessions/abc/bridge-home");
}

static const struct mount_op *must(const struct mount_plan *mp, const char *dst, enum mount_op_kind k)
{
	const struct mount_op *op = mount_plan_find(mp, dst);
	if (!op)
		fail_msg("no op for %s", dst);
	if (op->kind != k)
		fail_msg("op for %s has kind %d, want %d", dst, op->kind, k);
	return op;
}

static void test_system_dirs(void **state)
{
	struct aisb_plan p;
	struct mount_host_facts f;
	struct mount_plan mp;

	base_plan(&p);
	base_facts(&f);
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_true(must(&mp, "/usr", MOP_BIND)->flags & MOP_F_RO);
	assert_true(must(&mp, "/etc", MOP_BIND)->flags & MOP_F_RO);
	assert_string_equal(must(&mp, "/bin", MOP_SYMLINK)->src, "usr/bin");
	assert_true(must(&mp, "/sbin", MOP_BIND)->flags & MOP_F_RO);
	assert_null(mount_plan_find(&mp, "/opt"));
	assert_null(mount_plan_find(&mp, "/lib64"));
	must(&mp, "/proc", MOP_PROC);
	must(&mp, "/tmp", MOP_TMPFS);
	must(&mp, "/run", MOP_TMPFS);
	must(&mp, "/dev", MOP_TMPFS);
	must(&mp, "/dev/pts", MOP_DEVPTS);
	assert_true(must(&mp, "/dev/null", MOP_BIND)->flags & MOP_F_DEV);
	/* the deny list: nothing of these ever appears as a destination or a source */
	for (size_t i = 0; i < mp.n; i++) {
		static const char *const never[] = { "/home/alice", "/root", "/sys", "/dev/net/tun",
						     "/var/run", "/run/user", "/var/run/docker.sock",
						     "/run/podman", "/media", "/mnt", "/srv" };
		for (size_t j = 0; j < ELEMENTSOF(never); j++) {
			if (streq(mp.ops[i].dst, never[j]))
				fail_msg("%s mounted", never[j]);
			if (mp.ops[i].src && mp.ops[i].kind == MOP_BIND && streq(mp.ops[i].src, never[j]))
				fail_msg("%s used as a source", never[j]);
		}
		if (mp.ops[i].kind == MOP_BIND && mp.ops[i].src && path_startswith(mp.ops[i].src, "/dev") &&
		    !(mp.ops[i].flags & MOP_F_DEV))
			fail_msg("a /dev source that is not a device node: %s", mp.ops[i].src);
	}
	/* generated identity files cover the host's */
	assert_string_equal(must(&mp, "/etc/passwd", MOP_BIND)->src, "/state/sessions/abc/etc/passwd");
	assert_true(must(&mp, "/etc/resolv.conf", MOP_BIND)->flags & MOP_F_RO);
	mount_plan_free(&mp);
	mount_host_facts_free(&f);
	plan_free(&p);
}

/* Order matters: a bind must come after the mount it lands in. */
static size_t index_of(const struct mount_plan *mp, const char *dst)
{
	for (size_t i = 0; i < mp->n; i++)
		if (streq(mp->ops[i].dst, dst))
			return i;
	fail_msg("no %s", dst);
	return 0;
}

static void test_project_and_git(void **state)
{
	struct aisb_plan p;
	struct mount_host_facts f;
	struct mount_plan mp;

	base_plan(&p);
	base_facts(&f);
	f.git = GIT_DIR;
	f.git_hooks = f.git_config = f.git_modules = true;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_true(must(&mp, "/home/alice/proj/.git/modules", MOP_BIND)->flags & MOP_F_RO);
	assert_false(must(&mp, "/home/alice/proj", MOP_BIND)->flags & MOP_F_RO);
	/* .git pinned (a mount point cannot be renamed), hooks and config read-only */
	assert_false(must(&mp, "/home/alice/proj/.git", MOP_BIND)->flags & MOP_F_RO);
	assert_true(must(&mp, "/home/alice/proj/.git/hooks", MOP_BIND)->flags & MOP_F_RO);
	assert_true(must(&mp, "/home/alice/proj/.git/config", MOP_BIND)->flags & (MOP_F_RO | MOP_F_FILE));
	assert_true(index_of(&mp, "/home/alice/proj") < index_of(&mp, "/home/alice/proj/.git"));
	assert_true(index_of(&mp, "/home/alice/proj/.git") < index_of(&mp, "/home/alice/proj/.git/hooks"));
	assert_true(index_of(&mp, "/etc") < index_of(&mp, "/etc/passwd"));
	assert_true(index_of(&mp, "/dev") < index_of(&mp, "/dev/null"));
	/* absent: not pinned (gitguard judges them after the run) */
	assert_null(mount_plan_find(&mp, "/home/alice/proj/.git/commondir"));
	assert_null(mount_plan_find(&mp, "/home/alice/proj/.git/worktrees"));
	mount_plan_free(&mp);

	/* present: the files that move git's config and objects elsewhere, read-only */
	char *pin_files[] = { strdup("commondir"), strdup("config.worktree"), strdup("objects/info/alternates"),
			      strdup("worktrees/w/commondir"), NULL };
	char *pin_dirs[] = { strdup("worktrees/w"), NULL };
	f.git_pin_files = pin_files;
	f.git_pin_dirs = pin_dirs;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_true(must(&mp, "/home/alice/proj/.git/commondir", MOP_BIND)->flags & MOP_F_FILE);
	assert_true(must(&mp, "/home/alice/proj/.git/commondir", MOP_BIND)->flags & MOP_F_RO);
	assert_true(must(&mp, "/home/alice/proj/.git/config.worktree", MOP_BIND)->flags & MOP_F_RO);
	assert_true(must(&mp, "/home/alice/proj/.git/objects/info/alternates", MOP_BIND)->flags & MOP_F_RO);
	assert_true(must(&mp, "/home/alice/proj/.git/worktrees/w/commondir", MOP_BIND)->flags & MOP_F_RO);
	/* a worktree's dir is pinned (bound onto itself) but stays writable: gc writes its reflogs */
	assert_false(must(&mp, "/home/alice/proj/.git/worktrees/w", MOP_BIND)->flags & MOP_F_RO);
	assert_null(mount_plan_find(&mp, "/home/alice/proj/.git/worktrees"));
	assert_true(index_of(&mp, "/home/alice/proj/.git/worktrees/w") <
		    index_of(&mp, "/home/alice/proj/.git/worktrees/w/commondir"));
	mount_plan_free(&mp);
	for (size_t i = 0; pin_files[i]; i++)
		free(pin_files[i]);
	free(pin_dirs[0]);
	f.git_pin_files = f.git_pin_dirs = NULL;

	/* --writable-git: no git binds */
	p.writable_git = true;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_null(mount_plan_find(&mp, "/home/alice/proj/.git/hooks"));
	assert_null(mount_plan_find(&mp, "/home/alice/proj/.git"));
	mount_plan_free(&mp);

	/* a worktree's .git file is bound read-only */
	p.writable_git = false;
	f.git = GIT_FILE;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_true(must(&mp, "/home/alice/proj/.git", MOP_BIND)->flags & MOP_F_RO);
	assert_null(mount_plan_find(&mp, "/home/alice/proj/.git/hooks"));
	mount_plan_free(&mp);

	/* --read-only: the project and its .git are read-only */
	p.project_ro = true;
	f.git = GIT_DIR;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_true(must(&mp, "/home/alice/proj", MOP_BIND)->flags & MOP_F_RO);
	assert_true(must(&mp, "/home/alice/proj/.git", MOP_BIND)->flags & MOP_F_RO);
	mount_plan_free(&mp);
	mount_host_facts_free(&f);
	plan_free(&p);
}

static void test_home_agents_mounts(void **state)
{
	struct aisb_plan p;
	struct mount_host_facts f;
	struct mount_plan mp;
	struct plan_mount *m = calloc(2, sizeof(*m));

	base_plan(&p);
	base_facts(&f);
	m[0] = (struct plan_mount){ strdup("/srv/data"), strdup("/data"), true, true };
	m[1] = (struct plan_mount){ strdup("/srv/out"), strdup("/out"), false, true };
	p.agents_src = strdup("/home/alice/.agents");
	p.mounts = m;
	p.n_mounts = 2;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_false(must(&mp, "/home/sandbox", MOP_BIND)->flags & MOP_F_RO);
	assert_true(must(&mp, "/home/sandbox/.agents", MOP_BIND)->flags & MOP_F_RO);
	assert_true(index_of(&mp, "/home/sandbox") < index_of(&mp, "/home/sandbox/.agents"));
	assert_true(must(&mp, "/data", MOP_BIND)->flags & MOP_F_RO);
	assert_false(must(&mp, "/out", MOP_BIND)->flags & MOP_F_RO);
	mount_plan_free(&mp);

	/* ephemeral home and no project */
	free(p.home_src);
	p.home_src = NULL;
	free(p.project_src);
	p.project_src = NULL;
	free(f.home_src);
	f.home_src = NULL;
	free(f.project_src);
	f.project_src = NULL;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_non_null(strstr(must(&mp, "/home/sandbox", MOP_TMPFS)->data, "uid=1000"));
	assert_null(mount_plan_find(&mp, "/home/alice/proj"));
	mount_plan_free(&mp);
	mount_host_facts_free(&f);
	plan_free(&p);
}

static void test_root_masks(void **state)
{
	struct aisb_plan p;
	struct mount_host_facts f;
	struct mount_plan mp;

	base_plan(&p);
	base_facts(&f);
	strv_push(&f.masked_files, "/etc/shadow");
	strv_push(&f.masked_dirs, "/etc/ssl/private");
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_string_equal(must(&mp, "/etc/shadow", MOP_BIND)->src, "/dev/null");
	assert_true(must(&mp, "/etc/shadow", MOP_BIND)->flags & MOP_F_RO);
	assert_true(must(&mp, "/etc/ssl/private", MOP_TMPFS)->flags & MOP_F_RO);
	assert_true(index_of(&mp, "/etc") < index_of(&mp, "/etc/shadow"));
	mount_plan_free(&mp);
	mount_host_facts_free(&f);
	plan_free(&p);
}

/* Root caller with idmapped trees: /etc and /opt are the supervisor's prepared fds (data), nothing
 * is masked, and the generated files still go on top of /etc. */
static void test_root_idmapped(void **state)
{
	struct aisb_plan p;
	struct mount_host_facts f;
	struct mount_plan mp;
	const struct mount_op *op;

	base_plan(&p);
	base_facts(&f);
	f.has_opt = true;
	f.idmapped = true;
	f.etc_tree = 41;
	f.opt_tree = 42;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	op = must(&mp, "/etc", MOP_BIND);
	assert_true((op->flags & (MOP_F_PREPARED | MOP_F_RO)) == (MOP_F_PREPARED | MOP_F_RO));
	assert_string_equal(op->data, "41");
	op = must(&mp, "/opt", MOP_BIND);
	assert_true(op->flags & MOP_F_PREPARED);
	assert_string_equal(op->data, "42");
	assert_null(mount_plan_find(&mp, "/etc/shadow"));
	assert_true(index_of(&mp, "/etc") < index_of(&mp, "/etc/passwd"));
	mount_plan_free(&mp);
	f.idmapped = false; /* the fds are not real: nothing to close */
	mount_host_facts_free(&f);
	plan_free(&p);
}

/* The tmpfs upper's bound: half the memory limit, never above half the RAM (tmpfs's own
 * default), half the default limit when neither is known; the test hook only lowers it. */
static void test_upper_size(void **state)
{
	static const struct {
		uint64_t mem, ram, test, want;
	} t[] = {
		{ 4ULL << 30, 24ULL << 30, 0, 2ULL << 30 },    /* the default limit on a large host */
		{ 4ULL << 30, 2ULL << 30, 0, 1ULL << 30 },     /* a small host: half its RAM */
		{ 64 << 20, 2ULL << 30, 0, 32 << 20 },         /* --memory 64M: 32M */
		{ 0, 16ULL << 30, 0, 8ULL << 30 },             /* --memory max: half the RAM */
		{ 0, 0, 0, CGROUP_MEMORY_DEFAULT / 2 },        /* nothing known */
		{ 512ULL << 20, 0, 0, 256ULL << 20 },          /* RAM unknown: half the limit */
		{ 4ULL << 30, 24ULL << 30, 8 << 20, 8 << 20 }, /* the test hook lowers */
		{ 8 << 20, 24ULL << 30, 1ULL << 30, 4 << 20 }, /* ... and never raises */
	};
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(t); i++)
		assert_int_equal(mount_upper_size(t[i].mem, t[i].ram, t[i].test), t[i].want);
}

/* /tmp, /dev/shm, /run: shares of the memory limit, at most half the RAM each (issue 22) */
static void test_tmpfs_size(void **state)
{
	(void)state;
	assert_int_equal(mount_tmpfs_size(4ULL << 30, 24ULL << 30, 2), 2ULL << 30);
	assert_int_equal(mount_tmpfs_size(4ULL << 30, 24ULL << 30, 4), 1ULL << 30);
	assert_int_equal(mount_tmpfs_size(4ULL << 30, 24ULL << 30, 8), 512ULL << 20);
	assert_int_equal(mount_tmpfs_size(64ULL << 30, 24ULL << 30, 2), 12ULL << 30); /* half the RAM */
	assert_int_equal(mount_tmpfs_size(0, 0, 2), 2ULL << 30);                       /* the default limit */
	assert_int_equal(mount_tmpfs_size(1 << 20, 0, 8), 1 << 20);                    /* 1 MiB at least */
}

/* An image root: op 0 is the overlay; the no-overlay fallback's ops (tmpfs mirrors of the image's
 * /etc and /var, a tmpfs on /var/tmp) are in the plan, flagged, before anything mounted into them;
 * /tmp, /run and the home are the same ops as with overlay. The test hook sets MOP_F_NO_OVERLAY. */
static void test_image_fallback(void **state)
{
	struct aisb_plan p;
	struct mount_host_facts f;
	struct mount_plan mp;
	const struct mount_op *op;

	base_plan(&p);
	base_facts(&f);
	p.rootfs = ROOTFS_IMAGE;
	p.image_rootfs = strdup("/c/aisb/rootfs/abc");
	f.overlay_upper = strdup("/s/overlay/upper");
	f.overlay_work = strdup("/s/overlay/work");
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_int_equal(mp.ops[0].kind, MOP_OVERLAY);
	assert_string_equal(mp.ops[0].src, "/c/aisb/rootfs/abc");
	assert_string_equal(mp.ops[0].data, "/s/overlay/upper\n/s/overlay/work");
	assert_false(mp.ops[0].flags & MOP_F_NO_OVERLAY);
	assert_null(mount_plan_find(&mp, "/usr")); /* nothing of the host's system dirs */

	op = must(&mp, "/etc", MOP_MIRROR);
	assert_string_equal(op->src, "/c/aisb/rootfs/abc/etc");
	assert_true(op->flags & MOP_F_FALLBACK);
	op = must(&mp, "/var", MOP_MIRROR);
	assert_string_equal(op->src, "/c/aisb/rootfs/abc/var");
	assert_string_equal(op->data, "tmp");
	assert_true(op->flags & MOP_F_FALLBACK);
	op = must(&mp, "/var/tmp", MOP_TMPFS);
	assert_true(op->flags & MOP_F_FALLBACK);
	assert_false(op->flags & MOP_F_RO);
	assert_true(index_of(&mp, "/var") < index_of(&mp, "/var/tmp"));
	assert_true(index_of(&mp, "/etc") < index_of(&mp, "/etc/passwd"));

	/* writable in both modes, not fallback-only */
	assert_false(must(&mp, "/tmp", MOP_TMPFS)->flags & (MOP_F_FALLBACK | MOP_F_RO));
	assert_false(must(&mp, "/run", MOP_TMPFS)->flags & (MOP_F_FALLBACK | MOP_F_RO));
	assert_false(must(&mp, "/home/sandbox", MOP_BIND)->flags & (MOP_F_FALLBACK | MOP_F_RO));
	/* every fallback op is a mirror or the /var/tmp tmpfs */
	for (size_t i = 0; i < mp.n; i++)
		if (mp.ops[i].flags & MOP_F_FALLBACK)
			assert_true(mp.ops[i].kind == MOP_MIRROR || streq(mp.ops[i].dst, "/var/tmp"));
	/* the root mirror leaves out what gets its own mount */
	assert_string_equal(MOUNT_FALLBACK_ROOT_SKIP, "proc,dev,tmp,run,home,etc,var");
	mount_plan_free(&mp);

	/* with the kept session's dirs the upper is on disk; without them (a session that is not
	 * kept, --ephemeral) a tmpfs bounded by half the memory limit, or half the RAM below it */
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_false(mp.ops[0].flags & MOP_F_TMPFS_UPPER);
	mount_plan_free(&mp);
	free(f.overlay_upper);
	free(f.overlay_work);
	f.overlay_upper = f.overlay_work = NULL;
	p.limits.memory_max = 512ULL << 20;
	f.ram_bytes = 8ULL << 30;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_true(mp.ops[0].flags & MOP_F_TMPFS_UPPER);
	assert_string_equal(mp.ops[0].data, "mode=0755,size=268435456");
	mount_plan_free(&mp);
	f.ram_bytes = 256ULL << 20;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_string_equal(mp.ops[0].data, "mode=0755,size=134217728");
	mount_plan_free(&mp);
	p.image_upper_max = 1 << 20; /* AISB_TEST_UPPER_SIZE only lowers it */
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_string_equal(mp.ops[0].data, "mode=0755,size=1048576");
	mount_plan_free(&mp);
	p.image_upper_max = 0;

	/* the test hook */
	p.image_no_overlay = true;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_true(mp.ops[0].flags & MOP_F_NO_OVERLAY);
	mount_plan_free(&mp);

	/* a host root has no fallback ops */
	free(p.image_rootfs);
	p.image_rootfs = NULL;
	p.rootfs = ROOTFS_HOST;
	p.image_no_overlay = false;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	for (size_t i = 0; i < mp.n; i++)
		assert_false(mp.ops[i].flags & MOP_F_FALLBACK);
	mount_plan_free(&mp);
	mount_host_facts_free(&f);
	plan_free(&p);
}

static void test_exit_codes(void **state)
{
	assert_int_equal(sandbox_exit_code(0), 0);
	assert_int_equal(sandbox_exit_code(42 << 8), 42);
	assert_int_equal(sandbox_exit_code(9), 137);     /* killed by SIGKILL */
	assert_int_equal(sandbox_exit_code(15), 143);    /* SIGTERM */
	assert_int_equal(sandbox_exit_code(127 << 8), 127);
}

/* A build's RUN step (build/native.c): the overlay or nothing, and exactly the /proc and /dev
 * ops of `aisb run` (one list, so a fix to them protects both). */
static void test_build_step(void **state)
{
	const struct mount_step ms = { .lower = "/store/rootfs/x", .upper = "/store/tmp/b/upper",
				       .work = "/store/tmp/b/work", .resolv = "/store/tmp/b/upper.resolv.conf" };
	struct mount_plan step, run;
	struct aisb_plan p;
	struct mount_host_facts f;
	const struct mount_op *op;
	size_t from, n = 0;

	(void)state;
	assert_int_equal(mount_plan_build_step(&ms, &step), 0);
	op = &step.ops[0];
	assert_int_equal(op->kind, MOP_OVERLAY);
	assert_string_equal(op->dst, "/");
	assert_string_equal(op->src, "/store/rootfs/x");
	assert_string_equal(op->data, "/store/tmp/b/upper\n/store/tmp/b/work");
	assert_true(op->flags & MOP_F_NO_FALLBACK);
	assert_false(op->flags & MOP_F_NO_OVERLAY);
	/* no layer trees until mount_remap_plan() makes them (a root caller's step): the applier
	 * opens the dirs by name, and mount_plan_free() closes nothing */
	assert_false(op->flags & MOP_F_PREPARED);
	assert_int_equal(op->lower_tree, -1);
	assert_int_equal(op->dirs_tree, -1);
	op = must(&step, "/etc/resolv.conf", MOP_BIND);
	assert_string_equal(op->src, ms.resolv);
	assert_int_equal(op->flags, MOP_F_RO | MOP_F_FILE | MOP_F_OVER_LINK);
	must(&step, MOUNT_STEP_DIR, MOP_MKDIR);
	/* nothing of the host but the device nodes and the resolver file */
	for (size_t i = 0; i < step.n; i++)
		if (step.ops[i].kind == MOP_BIND)
			assert_true((step.ops[i].flags & MOP_F_DEV) || step.ops[i].src == NULL ||
				    streq(step.ops[i].src, ms.resolv));
	assert_null(mount_plan_find(&step, "/tmp"));
	assert_null(mount_plan_find(&step, "/home"));

	/* the same kernel filesystem ops, in the same order, as an image run's */
	base_plan(&p);
	p.rootfs = ROOTFS_IMAGE;
	p.image_rootfs = strdup("/store/rootfs/x");
	base_facts(&f);
	assert_int_equal(mount_plan_build(&p, &f, NULL, &run), 0);
	for (from = 0; from < run.n && !streq(run.ops[from].dst, "/proc"); from++)
		;
	for (size_t i = 1; i < step.n && (step.ops[i].kind != MOP_MKDIR); i++, n++) {
		const struct mount_op *a = &step.ops[i], *b = &run.ops[from + n];
		assert_int_equal(a->kind, b->kind);
		assert_string_equal(a->dst, b->dst);
		assert_true((!a->data && !b->data) || streq(a->data, b->data));
		assert_int_equal(a->flags, b->flags);
	}
	assert_true(n >= 12); /* proc, the /dev tmpfs, 6 nodes, devpts, ptmx, shm, 4 fd links */
	mount_plan_free(&step);
	mount_plan_free(&run);
	free(p.image_rootfs);
	free(p.project_src);
	free(p.project_dst);
	free(p.home_src);
	mount_host_facts_free(&f);

	/* without the gate there is no resolver file */
	const struct mount_step nogate = { .lower = "/l", .upper = "/u", .work = "/w" };
	assert_int_equal(mount_plan_build_step(&nogate, &step), 0);
	assert_null(mount_plan_find(&step, "/etc/resolv.conf"));
	mount_plan_free(&step);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_dirs),
		cmocka_unit_test(test_project_and_git),
		cmocka_unit_test(test_home_agents_mounts),
		cmocka_unit_test(test_root_masks),
		cmocka_unit_test(test_root_idmapped),
		cmocka_unit_test(test_upper_size),
		cmocka_unit_test(test_tmpfs_size),
		cmocka_unit_test(test_image_fallback),
		cmocka_unit_test(test_exit_codes),
		cmocka_unit_test(test_build_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
