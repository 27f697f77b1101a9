// SPDX-License-Identifier: GPL-2.0-or-later
/* native-job.c — the native builder's job: FROM pinned through the store, the cache key, the
 * steps on the build's overlay (build/native.c), one layer committed (build/commit.c), each a
 * stage with what it must and must not do (build/pipeline-internal.h)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build/commit.h"
#include "build/layer.h"
#include "build/native.h"
#include "build/pipeline-internal.h"
#include "build/recipe.h"
#include "ns/limits.h"
#include "ns/mounts.h"
#include "ns/userns.h"
#include "rootfs/image.h"
#include "rootfs/ref.h"
#include "rootfs/store.h"
#include "util/dl.h"
#include "util/hostenv.h"
#include "util/log.h"
#include "util/util.h"

/* The build dir, all under the store's tmp/ (the image's tree is made from the upper by
 * hardlinks): the overlay's upper and work. *@bdir is set as soon as it exists (the caller
 * removes it). Return: 0, or -errno after logging. */
static int native_build_dir(struct store *s, char **bdir, char **upper, char **work)
{
	if (!(*bdir = build_dir_new(s)))
		return -EIO; /* said */
	*upper = path_join(*bdir, "upper");
	*work = path_join(*bdir, "work");
	if (!*upper || !*work)
		return log_error_errno(-ENOMEM, "Out of memory");
	if (mkdir(*upper, 0755) < 0 || mkdir(*work, 0700) < 0)
		return log_error_errno(-errno, "Failed to create the overlay dirs in '%s': %m", *bdir);
	return 0;
}

/* The recipe evaluated against the base's Env, WorkingDir and User. Return: 0 or an exit code
 * (78 for the recipe's error, said with its line). */
static int native_resolve(const struct build_request *o, const struct containerfile *cf,
			  const struct oci_image_config *bcfg, struct cf_recipe *rc)
{
	struct cf_base cb = { .env = bcfg->env, .workdir = bcfg->working_dir, .user = bcfg->user };
	struct cf_error err;
	int r = cf_resolve(cf, o->build_args, &cb, rc, &err);

	return r < 0 ? build_report_recipe(build_recipe_name(o), r, &err) : 0;
}

/* The context directory (when a COPY needs it), the transcript and, when RUN steps have an
 * allowlist, the egress log: every connection of a RUN is logged, or none is made. Return: 0,
 * or -errno after logging. */
static int native_open_files(const struct build_request *o, bool need_ctx, const char *tag, bool egress,
			     int *ctx_fd, int *log_fd, int *egress_fd)
{
	if (need_ctx) {
		*ctx_fd = open(o->context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (*ctx_fd < 0)
			return log_error_errno(-errno, "Failed to open the build context '%s': %m", o->context);
	}
	*log_fd = build_state_file(tag, "log", "transcript");
	if (egress) {
		*egress_fd = build_state_file(tag, "egress.jsonl", "egress log");
		if (*egress_fd < 0)
			return *egress_fd; /* said */
	}
	return 0;
}

/* What the native build's layer is committed from. */
struct native_commit_in {
	const struct build_request *o;
	const struct cf_recipe *rc;
	const char *bcfg_raw, *bman_raw; /* the base image's config and manifest */
	size_t bcfg_len, bman_len;
	const char *base_digest, *recipe_sha;
	const char *upper;                /* the overlay upper */
	char *cache_ref, *tag_local;      /* the names to store it under (tag_local may be NULL) */
	const char *base_rootfs_id;       /* the base's unpacked tree and size (build_commit_input) */
	uint64_t base_size;
	struct store_tree *tree;          /* the image's tree, the base linked in (or NULL); taken */
	int64_t started;                  /* the coarse clock (ns) before the steps wrote anything */
};

/* The layer's mtimes and the `created` of config and history for @o (enum build_time_from);
 * @started: what has an mtime from then on was written by the build. Does not log. */
static void build_times(const struct build_request *o, int64_t started, struct layer_times *t, char created[32])
{
	time_t e = (time_t)o->timestamp;
	struct tm tm;

	*t = (struct layer_times){ .epoch = o->timestamp, .since_ns = started, .clamp = o->time_from == TIME_SDE,
				   .all = o->time_from == TIME_TIMESTAMP };
	strftime(created, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&e, &tm));
}

/* The upper as one layer, committed with the base's config under the build's names; prints the
 * name. Return: 0, or -errno after logging. */
static int native_commit(struct store *s, const struct native_commit_in *c, struct store_ref *pin)
{
	_cleanup_close_ int ufd = -1;
	_cleanup_strv_free_ char **labels = NULL;
	_cleanup_free_ char *history = NULL, *final = NULL;
	struct store_tree *tree = c->tree;
	struct unpack_limits lim;
	struct layer_result lr;
	struct build_layer_blob blob;
	struct layer_times times;
	char created[32], *l;
	int r;

	/* the image's tree is the base's tree linked (by a child while the steps ran), and the upper
	 * applied to it while the layer is written from it: no second 300 MB write unpacking the
	 * layer, no 300 MB freed with the build dir (measured: 5.7 s of 20.7 s, docs/measurements.md) */
	r = tree ? store_tree_ready(tree) : 0;
	if (r < 0) {
		/* the linked tree is only a shortcut: whatever stopped it (a store on another
		 * filesystem, EMLINK, the child killed by the OOM killer), unpacking the layers makes
		 * the same tree, and reports its own error if it cannot */
		store_tree_abort(tree);
		tree = NULL;
		log_debug("the base tree cannot be linked (%s): the image is unpacked from its layers", strerror(-r));
	}

	if (asprintf(&l, "aisb.base-digest=%s", c->base_digest) < 0 || strv_push_take(&labels, l) < 0 ||
	    asprintf(&l, "aisb.recipe-sha256=%s", c->recipe_sha) < 0 || strv_push_take(&labels, l) < 0 ||
	    strv_push(&labels, "aisb.builder=native") < 0 ||
	    asprintf(&l, "aisb.version=%s", PACKAGE_VERSION) < 0 || strv_push_take(&labels, l) < 0 ||
	    asprintf(&history, "aisb build%s%s (%zu steps)", c->o->file ? " -f " : "", c->o->file ? c->o->file : "",
		     c->rc->n_steps) < 0) {
		store_tree_abort(tree);
		return log_error_errno(-ENOMEM, "Out of memory");
	}
	build_times(c->o, c->started, &times, created);
	ufd = open(c->upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ufd < 0) {
		store_tree_abort(tree);
		return log_error_errno(-errno, "Failed to open the build's upper dir: %m");
	}
	unpack_limits_default(&lim);
	r = build_layer_store_as(s, ufd, tree, &lim, c->o->comp, c->o->comp_level, &times, &lr, &blob);
	if (r < 0 || !lr.tree_done) {
		store_tree_abort(tree);
		tree = NULL;
	}
	if (r < 0)
		return r;
	{
		char *names[] = { c->cache_ref, c->tag_local, NULL };
		struct build_commit_input in = { .base_config = c->bcfg_raw, .base_config_len = c->bcfg_len,
						 .base_manifest = c->bman_raw, .base_manifest_len = c->bman_len,
						 .rc = c->rc, .labels = labels, .created = created, .created_by = history,
						 .layer_digest = blob.digest, .layer_size = blob.size,
						 .diff_id = lr.digest, .layer_media_type = blob.media_type,
						 .base_rootfs_id = c->base_rootfs_id, .base_size = c->base_size,
						 .tree = tree, .tree_bytes = lr.sum.file_bytes };
		r = build_commit(s, &in, names, pin);
		if (r < 0)
			return r;
	}
	if (c->tag_local) {
		struct oci_ref tr;
		if (oci_ref_parse(c->tag_local, &tr) == 0) {
			final = strdup(tr.name);
			oci_ref_done(&tr);
		}
	}
	log_info("built %s: %u entries in one layer (%u whiteouts)", c->cache_ref, lr.n_entries, lr.n_whiteouts);
	printf("%s\n", final ? final : c->cache_ref);
	return 0;
}

/* What one native build holds between its stages: build_native() owns it. */
struct native_job {
	const struct build_request *o;
	const struct net_plan *np;
	const struct cf_step *run;         /* the first RUN step, or NULL */
	struct image_opts io;
	struct store *s;
	struct oci_ref bref;
	struct store_ref base, pin;
	struct oci_image_config bcfg;
	struct cf_recipe rc;
	struct ctx_state cs;
	char *bcfg_raw, *bman_raw, *cache_ref, *tag_local, *bdir, *upper, *work, *base_rootfs;
	struct store_tree *tree;           /* the image's tree, linked from the base's meanwhile */
	int64_t started;                   /* native_steps(): its start on the file times' clock */
	size_t bcfg_len, bman_len;
	int rootfs_lock, ctx_fd, log_fd, egress_fd;
	char tag[65], recipe_sha[65];
};

/* Stage: the base. Should: pin FROM by digest through the store (pulled when missing or
 * stale), lock its unpacked rootfs for the build's duration and read its config and manifest.
 * Mustn't: build on a base that is not locked. Return: 0 or the exit code. Logs on failure. */
static int native_base(struct native_job *j, const struct cf_recipe *rc0)
{
	if (image_opts_init(&j->io, hostenv_get) < 0)
		return AISB_EXIT_POLICY;
	if (build_registry_over(&j->io.reg, j->o) < 0)
		return log_error_errno(-ENOMEM, "%m"), AISB_EXIT_FAILED;
	j->io.quiet = true;
	if (oci_ref_parse(rc0->from, &j->bref) < 0)
		return log_error("line %u: FROM '%s' is not an image reference", rc0->from_line, rc0->from),
		       AISB_EXIT_POLICY;
	if (store_open(j->io.store_root, &j->s) < 0 || image_pull(j->s, &j->bref, &j->io, false, &j->base) < 0)
		return AISB_EXIT_FAILED;
	j->rootfs_lock = store_lock(j->s, "rootfs", j->base.rootfs_id, true);
	if (j->rootfs_lock < 0)
		return log_error_errno(j->rootfs_lock, "cannot lock the base rootfs: %m"), AISB_EXIT_FAILED;
	if (store_blob_read(j->s, j->base.config, OCI_JSON_MAX, &j->bcfg_raw, &j->bcfg_len) < 0 ||
	    store_blob_read(j->s, j->base.digest, OCI_JSON_MAX, &j->bman_raw, &j->bman_len) < 0 ||
	    oci_config_parse(j->bcfg_raw, j->bcfg_len, &j->bcfg) < 0)
		return log_error("%s: the base image's config or manifest is missing or malformed", j->base.name),
		       AISB_EXIT_FAILED;
	return 0;
}

/* Stage: the cache key. Should: evaluate the recipe again, now with the base's
 * Env/WorkingDir/User (ENV PATH=/x:$PATH needs them), hash the context that COPY reads, name
 * the result and look it up. Mustn't: run anything. Return: 0 (a miss), -1 (a hit: the build
 * is done, exit 0) or the exit code. Logs on failure. */
static int native_key(struct native_job *j, const struct containerfile *cf)
{
	_cleanup_free_ char *ser = NULL;
	size_t serlen = 0;
	int r = native_resolve(j->o, cf, &j->bcfg, &j->rc);

	if (r != 0)
		return r;
	r = build_load_context(j->o->context, &j->rc, true, &j->cs);
	if (r < 0)
		return r == -ENOENT || r == -EINVAL || r == -EFBIG ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
	ser = cf_serialize(cf, &serlen);
	if (!ser || build_sha256_hex(ser, serlen, j->recipe_sha) < 0)
		return log_error_errno(-ENOMEM, "Out of memory"), AISB_EXIT_FAILED;
	{
		/* the layer's compression and times are part of what is built: other ones are another
		 * image */
		static const char *const how[TIME_MAX] = { "default", "sde", "timestamp" };
		char builder[96];
		snprintf(builder, sizeof(builder), "native layer=%s-%d times=%s:%lld",
			 layer_compression_name(j->o->comp), j->o->comp_level, how[j->o->time_from],
			 (long long)j->o->timestamp);
		struct build_tag_input in = { .builder = builder, .base_digest = j->base.digest, .recipe = ser,
					      .recipe_len = serlen, .build_args = j->o->build_args, .ctx = &j->cs.ctx,
					      .copies = (const bool *const *)j->cs.copies, .n_copies = j->cs.n_copies };
		if (build_names(&in, j->o->tag, j->tag, &j->cache_ref, &j->tag_local) < 0)
			return log_error_errno(-ENOMEM, "Out of memory"), AISB_EXIT_FAILED;
	}
	r = build_cache_hit(j->s, j->cache_ref, j->tag_local);
	return r > 0 ? -1 : r < 0 ? AISB_EXIT_FAILED : 0;
}

/* The host ids the RUN steps run as (issue 22): the caller's, or for a root caller
 * USERNS_ROOT_RUN_ID when the base's tree and the build dir can be idmapped (build/native.h);
 * else kernel uid 0, said, with the pid namespace's pid_max as the steps' process bound
 * (RLIMIT_NPROC does not bind uid 0; Linux 6.14+, ns/limits.h). AISB_TEST_NO_IDMAP=1 forces
 * that. Does not fail. */
static void native_ids(const struct native_job *j, uid_t *uid, gid_t *gid)
{
	const char *paths[] = { j->base_rootfs, j->bdir, NULL };
	char why[PATH_MAX + 128] = "no idmapped mounts: they need CAP_SYS_ADMIN in the initial user namespace, or AISB_TEST_NO_IDMAP=1 is set";

	*uid = getuid();
	*gid = getgid();
	if (!j->run || *uid != 0)
		return;
	if (j->o->root_remap && mount_remap_probe(paths, USERNS_ROOT_RUN_ID, why, sizeof(why)) == 0) {
		*uid = USERNS_ROOT_RUN_ID;
		*gid = USERNS_ROOT_RUN_ID;
		return;
	}
	log_info("RUN steps run as kernel uid 0 (%s): %s", why,
		 limits_pidns_supported() ? "their processes are bounded by their pid namespace's pid_max"
					  : "RLIMIT_NPROC does not bind them, and nothing else does without cgroups");
}

/* Stage: the steps. Should: load libmnl and libnftnl when RUN steps install the nftables
 * ruleset, here, while this process sees the host's root (util/dl.h), before any step's
 * namespaces exist (not before the cache hit, which needs neither: measured, the two dlopen()s
 * were ~25% of a hit); make the build dir and its files, then apply the steps on the overlay
 * (native.c). Mustn't: mount anything in this process. Return: 0 or the exit code (77 when a
 * step's network policy could not be enforced). Logs on failure. */
static int native_steps(struct native_job *j)
{
	struct unpack_limits lim;
	int r;

	if (j->run && j->np && (dl_load(&dl_libmnl) < 0 || dl_load(&dl_libnftnl) < 0))
		return AISB_EXIT_ENFORCE;
	{
		/* file times come from the coarse clock: a file this build writes has an mtime at or
		 * after this, one that was there before (the context's) one tick (<= 10 ms) earlier
		 * or more */
		struct timespec now;
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		j->started = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	}
	if (native_build_dir(j->s, &j->bdir, &j->upper, &j->work) < 0)
		return AISB_EXIT_FAILED;
	j->base_rootfs = store_rootfs_path(j->s, j->base.rootfs_id);
	if (!j->base_rootfs)
		return log_error_errno(-ENOMEM, "Out of memory"), AISB_EXIT_FAILED;
	if (native_open_files(j->o, j->cs.n_copies > 0, j->tag, j->np && j->run, &j->ctx_fd, &j->log_fd,
			      &j->egress_fd) < 0)
		return AISB_EXIT_FAILED;
	/* the image's tree starts as the base's tree linked, by a child while the steps run (1000
	 * new directories and 8000 links for the Debian base: ~0.6 s CPU, measured) */
	unpack_limits_default(&lim);
	r = store_tree_begin(j->s, j->base.rootfs_id, &lim, true, &j->tree);
	if (r < 0 && r != -EXDEV && r != -EMLINK)
		return AISB_EXIT_FAILED;
	{
		struct native_build nb = { .base_rootfs = j->base_rootfs, .upper = j->upper, .work = j->work,
					   .ctx_fd = j->ctx_fd, .ctx = &j->cs.ctx, .copies = j->cs.copies, .rc = &j->rc,
					   .log_fd = j->log_fd, .net = j->np, .egress_fd = j->egress_fd };
		native_ids(j, &nb.run_uid, &nb.run_gid);
		r = native_apply_steps(&nb);
	}
	if (r < 0)
		return r == -EPERM ? AISB_EXIT_ENFORCE : AISB_EXIT_FAILED;
	return 0;
}

/* Releases what the stages made: the build dir removed, the base's lock dropped. Does not log. */
static void native_job_done(struct native_job *j)
{
	store_tree_abort(j->tree);
	if (j->bdir) {
		if (j->work)
			native_work_dir_release(j->work);
		(void)rm_rf(j->bdir);
	}
	store_ref_done(&j->pin);
	store_ref_done(&j->base);
	oci_config_done(&j->bcfg);
	oci_ref_done(&j->bref);
	cf_recipe_done(&j->rc);
	ctx_state_done(&j->cs);
	store_free(j->s);
	image_opts_done(&j->io);
	free(j->bcfg_raw);
	free(j->bman_raw);
	free(j->cache_ref);
	free(j->tag_local);
	free(j->bdir);
	free(j->upper);
	free(j->work);
	free(j->base_rootfs);
	{
		const int fds[] = { j->rootfs_lock, j->ctx_fd, j->log_fd, j->egress_fd };

		for (size_t i = 0; i < ELEMENTSOF(fds); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
}

int build_native(const struct build_request *o, const struct containerfile *cf, const struct cf_recipe *rc0,
		 const struct net_plan *np)
{
	struct native_job j = { .o = o, .np = np, .run = native_first_run(rc0), .rootfs_lock = -1, .ctx_fd = -1,
				.log_fd = -1, .egress_fd = -1 };
	int ex;

	if (j.run && !np && !o->file)
		log_warn("RUN steps have no network (loopback only): the built-in recipe needs %s", RECIPE_ALLOW_HINT);
	else if (j.run && !np)
		log_info("RUN steps have no network (loopback only); --allow ENTRY lets them reach ENTRY "
			 "through the gate");
	ex = native_base(&j, rc0);
	if (ex == 0)
		ex = native_key(&j, cf);
	if (ex == 0)
		ex = native_steps(&j);
	if (ex == 0) {
		struct native_commit_in c = { .o = o, .rc = &j.rc, .bcfg_raw = j.bcfg_raw, .bcfg_len = j.bcfg_len,
					      .bman_raw = j.bman_raw, .bman_len = j.bman_len,
					      .base_digest = j.base.digest, .recipe_sha = j.recipe_sha,
					      .upper = j.upper, .cache_ref = j.cache_ref,
					      .tag_local = j.tag_local, .base_rootfs_id = j.base.rootfs_id,
					      .base_size = j.base.size, .tree = j.tree, .started = j.started };
		j.tree = NULL; /* native_commit() takes it */
		ex = native_commit(j.s, &c, &j.pin) < 0 ? AISB_EXIT_FAILED : 0;
	}
	native_job_done(&j);
	return ex < 0 ? 0 : ex; /* -1: a cache hit */
}
