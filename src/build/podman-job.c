// SPDX-License-Identifier: GPL-2.0-or-later
/* podman-job.c — `aisb build --builder podman` (and the fallback of a host without the native
 * builder): podman builds the checked recipe, saves it as an OCI archive, and the store imports
 * it under the build's content-hash name (build/pipeline-internal.h)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "build/pipeline-internal.h"
#include "build/podman-netns.h"
#include "build/podman.h"
#include "net/gate.h"
#include "net/netplan.h"
#include "rootfs/image.h"
#include "rootfs/ref.h"
#include "rootfs/store.h"
#include "util/dl.h"
#include "util/hostenv.h"
#include "util/log.h"
#include "util/util.h"

/* What one podman build holds between its stages: build_podman() owns it. */
struct podman_job {
	const struct build_request *o;
	const struct net_plan *np;
	struct podman pm;
	struct image_opts io;
	struct store *s;
	struct ctx_state cs;
	char *base, *cache_ref, *tag_local, *tmp, *file;
	char tag[65], recipe_sha[65];
};

/* Stage: preflight. Should: refuse what podman would not honour (--timestamp, the registry
 * flags: its FROM pull has its own registries.conf and auth) and find podman; say which
 * network RUN gets. Mustn't: touch the store. Return: 0 or the exit code. Logs on failure. */
static int podman_preflight(struct podman_job *j)
{
	/* the native builder's times (native_commit()); podman 4.3 has --timestamp but no
	 * SOURCE_DATE_EPOCH, and its default is the build's clock */
	if (j->o->time_from == TIME_TIMESTAMP) {
		log_error("--timestamp is the native builder's: with --builder podman the image's times are "
			  "podman's (drop --timestamp, or build natively)");
		return AISB_EXIT_POLICY;
	}
	if (j->o->time_from == TIME_SDE)
		log_warn("SOURCE_DATE_EPOCH is not applied by --builder podman: the image's times are the build's");
	if (podman_init(&j->pm, hostenv_get("PATH")) == -ENOENT) {
		log_error("--builder podman: podman is not installed (apt-get install podman runc)");
		return AISB_EXIT_FAILED;
	}
	if (j->o->reg_given) {
		/* podman pulls FROM with its own registries.conf and auth; aisb's flags would not reach
		 * it, and silently ignoring --tls-verify or --authfile is worse than refusing */
		log_error("--tls-verify, --cert-dir and --authfile apply to the native builder's FROM pull: with "
			  "--builder podman, pull the base with 'podman pull' first (or use the native builder)");
		return AISB_EXIT_POLICY;
	}
	/* without --allow RUN steps are offline, as the native builder's: podman's own network would
	 * be an exit no policy limits */
	j->pm.no_network = !j->np;
	log_info("building with podman%s: %s",
		 j->pm.runtime_runc ? " (--runtime runc: this host has no pure cgroup v2)" : "",
		 j->np ? "RUN steps reach the network through aisb's gate (--network=ns:, as the native builder's)"
		       : "RUN steps get no network (--network=none); --allow HOST[:PORT] lets them reach a host through aisb's gate");
	return 0;
}

/* Stage: the cache key. Should: pin FROM by podman's digest, hash the context COPY reads and
 * the recipe, name the result and look it up in the store. Mustn't: run a step. Return: 0 (a
 * miss), -1 (a hit: the build is done, exit 0) or the exit code. Logs on failure. */
static int podman_key(struct podman_job *j, const struct containerfile *cf, const struct cf_recipe *rc)
{
	_cleanup_free_ char *ser = NULL;
	size_t serlen = 0;
	int r;

	if (podman_base_digest(&j->pm, rc->from, &j->base) < 0)
		return AISB_EXIT_FAILED;
	r = build_load_context(j->o->context, rc, true, &j->cs);
	if (r < 0)
		return r == -ENOENT || r == -EINVAL || r == -EFBIG ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
	ser = cf_serialize(cf, &serlen);
	if (!ser || build_sha256_hex(ser, serlen, j->recipe_sha) < 0)
		return log_error_errno(-ENOMEM, "Out of memory"), AISB_EXIT_FAILED;
	{
		struct build_tag_input in = { .builder = "podman", .base_digest = j->base, .recipe = ser,
					      .recipe_len = serlen, .build_args = j->o->build_args, .ctx = &j->cs.ctx,
					      .copies = (const bool *const *)j->cs.copies, .n_copies = j->cs.n_copies };
		if (build_names(&in, j->o->tag, j->tag, &j->cache_ref, &j->tag_local) < 0)
			return log_error_errno(-ENOMEM, "Out of memory"), AISB_EXIT_FAILED;
	}
	if (image_opts_init(&j->io, hostenv_get) < 0)
		return AISB_EXIT_POLICY;
	j->io.quiet = true;
	if (store_open(j->io.store_root, &j->s) < 0)
		return AISB_EXIT_FAILED;
	/* Cache: the same inputs were built before. Nothing runs. */
	r = build_cache_hit(j->s, j->cache_ref, j->tag_local);
	return r > 0 ? -1 : r < 0 ? AISB_EXIT_FAILED : 0;
}

/* podman build in the netns of build/podman-netns.h, behind the gate of a native RUN step: the
 * same allowlist, egress log (build-TAG.egress.jsonl) and summary; a gate that could not confine
 * itself fails the build closed (77), as it fails a native step. Returns an exit code. */
static int podman_gated_build(struct podman *pm, const struct net_plan *np, const char *tag, const char *file,
			      const char *context, const char *image, char *const *build_args, char *const *labels)
{
	struct podman_netns ns = { .holder = -1, .sock = -1 };
	struct gate *gate = NULL;
	_cleanup_close_ int egress_fd = -1;
	int r, status = 0, ex;

	if (dl_load(&dl_libmnl) < 0 || dl_load(&dl_libnftnl) < 0)
		return AISB_EXIT_ENFORCE; /* said */
	egress_fd = build_state_file(tag, "egress.jsonl", "egress log");
	if (egress_fd < 0)
		return AISB_EXIT_FAILED; /* said: every connection is logged, or none is made */
	if (netplan_gate_new(np, egress_fd, NULL, NULL, &gate) < 0)
		return AISB_EXIT_FAILED;
	ex = podman_netns_open(pm->exe, np, gate, &ns);
	if (ex != 0) {
		gate_free(gate);
		return ex;
	}
	pm->netns = ns.path;
	r = podman_build(pm, file, context, image, build_args, labels, &status);
	pm->netns = NULL;
	podman_netns_close(&ns);
	gate_stop(gate);
	gate_summary(gate, stderr);
	if (gate_refused(gate)) {
		log_error("the build's network policy could not be enforced (the gate stopped); nothing was imported");
		ex = AISB_EXIT_ENFORCE;
	} else {
		ex = r < 0 ? AISB_EXIT_FAILED : 0;
	}
	gate_free(gate);
	return ex;
}

/* Stage: the build. Should: hand podman the very text that was checked and hashed (written to
 * the build dir, not the file read again), with the labels that name the inputs, offline or
 * behind the gate. Mustn't: let podman's own network reach anything. Return: 0 or the exit
 * code. Logs on failure. */
static int podman_run(struct podman_job *j, const char *text, size_t len)
{
	_cleanup_strv_free_ char **labels = NULL;
	char *l;
	int r, status = 0;

	if (!(j->tmp = build_dir_new(j->s)))
		return AISB_EXIT_FAILED;
	if (!(j->file = path_join(j->tmp, "Containerfile")))
		return log_error_errno(-ENOMEM, "Out of memory"), AISB_EXIT_FAILED;
	r = write_file_at(AT_FDCWD, j->file, text, len, 0600);
	if (r < 0)
		return log_error_errno(r, "Failed to write '%s': %m", j->file), AISB_EXIT_FAILED;
	if (asprintf(&l, "aisb.base-digest=%s", j->base) < 0 || strv_push_take(&labels, l) < 0 ||
	    asprintf(&l, "aisb.recipe-sha256=%s", j->recipe_sha) < 0 || strv_push_take(&labels, l) < 0 ||
	    strv_push(&labels, "aisb.builder=podman") < 0 ||
	    asprintf(&l, "aisb.version=%s", PACKAGE_VERSION) < 0 || strv_push_take(&labels, l) < 0)
		return log_error_errno(-ENOMEM, "Out of memory"), AISB_EXIT_FAILED;
	if (j->np)
		return podman_gated_build(&j->pm, j->np, j->tag, j->file, j->o->context, j->cache_ref,
					  j->o->build_args, labels);
	if (podman_build(&j->pm, j->file, j->o->context, j->cache_ref, j->o->build_args, labels, &status) < 0)
		return AISB_EXIT_FAILED;
	return 0;
}

/* Stage: the import. Should: save podman's image as an OCI archive in the build dir, import it
 * into the store and pin it under the build's names (the archive's own pin dropped: the file
 * goes with the build dir); print the name. Return: 0 or the exit code. Logs on failure. */
static int podman_import(struct podman_job *j)
{
	_cleanup_free_ char *archive = NULL, *aname = NULL, *final = NULL;
	struct oci_ref aref = { 0 };
	struct store_ref pin = { 0 };
	int ex = AISB_EXIT_FAILED;

	archive = path_join(j->tmp, "image.oci.tar");
	if (!archive || asprintf(&aname, "oci-archive:%s", archive) < 0) {
		aname = NULL;
		return log_error_errno(-ENOMEM, "Out of memory"), AISB_EXIT_FAILED;
	}
	if (podman_save(&j->pm, j->cache_ref, archive) < 0)
		return AISB_EXIT_FAILED;
	if (oci_ref_parse(aname, &aref) < 0)
		return log_error("internal: '%s' is not a reference", aname), AISB_EXIT_FAILED;
	if (image_pull(j->s, &aref, &j->io, true, &pin) < 0 || build_pin_as(j->s, &pin, j->cache_ref, NULL) < 0)
		goto out;
	(void)store_ref_remove(j->s, aref.name);
	if (j->tag_local && build_pin_as(j->s, &pin, j->tag_local, &final) < 0)
		goto out;
	printf("%s\n", final ? final : j->cache_ref);
	ex = 0;
out:
	store_ref_done(&pin);
	oci_ref_done(&aref);
	return ex;
}

int build_podman(const struct build_request *o, const char *text, size_t len, const struct containerfile *cf,
		 const struct cf_recipe *rc, const struct net_plan *np)
{
	struct podman_job j = { .o = o, .np = np };
	int ex;

	ex = podman_preflight(&j);
	if (ex == 0)
		ex = podman_key(&j, cf, rc);
	if (ex == 0)
		ex = podman_run(&j, text, len);
	if (ex == 0)
		ex = podman_import(&j);
	if (j.tmp)
		(void)rm_rf(j.tmp);
	store_free(j.s);
	image_opts_done(&j.io);
	ctx_state_done(&j.cs);
	podman_done(&j.pm);
	free(j.base);
	free(j.cache_ref);
	free(j.tag_local);
	free(j.tmp);
	free(j.file);
	return ex < 0 ? 0 : ex; /* -1: a cache hit */
}
