// SPDX-License-Identifier: GPL-2.0-or-later
/* image.c — pull (registry, oci dir, oci/docker archives), pins and the run path's rootfs */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "rootfs/image.h"
#include "util/dl.h"
#include "util/homedir.h"
#include "util/log.h"
#include "util/util.h"

#define BLOB_MAX (16ULL << 30) /* one blob from an archive or directory */
#define ARCHIVE_NAMES_MAX 1024u  /* names (pins) one archive may make */

/* ---- options ---- */

int image_opts_init(struct image_opts *o, image_env_getter get)
{
	const char *v;

	memset(o, 0, sizeof(*o));
	o->reg.tls_verify = true;
	o->ttl_days = 7;
	unpack_limits_default(&o->lim);
	/* AISB_STORE: another store than the cache's (a fleet runner's fresh store, CI caches) */
	v = get("AISB_STORE");
	if (v && *v && !path_is_absolute(v))
		return log_error("AISB_STORE='%s' is not an absolute path", v), -EINVAL;
	if (v && *v) {
		if (!(o->store_root = strdup(v)))
			return log_error("out of memory"), -ENOMEM;
	} else {
		/* the rule every command shares (util/homedir.h); it names XDG_CACHE_HOME */
		int r = homedir_aisb_usable(get, HOMEDIR_CACHE, &o->store_root);
		if (r < 0)
			return r;
	}
	v = get("AISB_BASE_TTL_DAYS");
	if (v && *v) {
		char *end;
		long d;
		errno = 0;
		d = strtol(v, &end, 10);
		if (errno || *end || d < -1 || d > 36500)
			return log_error("AISB_BASE_TTL_DAYS='%s' is not a number of days (-1 never, 0 always)", v),
			       -EINVAL;
		o->ttl_days = d;
	}
	/* podman's order: $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, then Docker's */
	o->reg.auth_files = calloc(1, sizeof(char *));
	if (!o->reg.auth_files)
		return -ENOMEM;
	if ((v = get("REGISTRY_AUTH_FILE")) && *v)
		strv_push(&o->reg.auth_files, v);
	if ((v = get("XDG_RUNTIME_DIR")) && path_is_absolute(v))
		strv_push_take(&o->reg.auth_files, path_join(v, "containers/auth.json"));
	if ((v = get("HOME")) && path_is_absolute(v))
		strv_push_take(&o->reg.auth_files, path_join(v, ".docker/config.json"));
	if ((v = get("HTTPS_PROXY")) || (v = get("https_proxy")))
		if (*v)
			o->reg.proxy = v;
	o->reg.progress = isatty(STDERR_FILENO);
	return 0;
}

void image_opts_done(struct image_opts *o)
{
	free(o->store_root);
	strv_free(o->reg.auth_files);
	memset(o, 0, sizeof(*o));
}

static const char *platform_string(char buf[64])
{
	const char *os, *arch, *variant;
	oci_host_platform(&os, &arch, &variant);
	snprintf(buf, 64, "%s/%s%s%s", os, arch, variant ? "/" : "", variant ?: "");
	return buf;
}

/* From a parsed index, the member digest for this host. Logs on failure. */
static int choose_member(const struct oci_manifest *idx, const char *tag, const char *what, char **digest)
{
	const char *os, *arch, *variant;
	int i;

	oci_host_platform(&os, &arch, &variant);
	i = oci_index_choose(idx, os, arch, variant, tag);
	if (i == -ENOENT && !tag && idx->n_manifests > 1) {
		/* an oci-layout index with several names and none asked for */
		bool any_platform = false;
		for (size_t k = 0; k < idx->n_manifests; k++)
			any_platform |= idx->manifests[k].arch != NULL;
		if (!any_platform)
			return log_error("%s holds %zu images: name one (oci:DIR:TAG)", what, idx->n_manifests), -ENOENT;
	}
	if (i < 0) {
		char plat[64];
		if (tag)
			return log_error("%s has no image tagged '%s' for %s", what, tag, platform_string(plat)), -ENOENT;
		return log_error("%s has no image for this platform (%s)", what, platform_string(plat)), -ENOENT;
	}
	*digest = strdup(idx->manifests[i].digest);
	return *digest ? 0 : -ENOMEM;
}

/* ---- registry ---- */

static int put_manifest(struct store *s, const char *buf, size_t len, const char *want)
{
	_cleanup_free_ char *got = NULL;
	int r = store_blob_put(s, buf, len, &got);
	if (r < 0)
		return r;
	if (want && !streq(want, got))
		return log_error("manifest content hashes to %s, not %s: refused", got, want), -EBADMSG;
	return 0;
}

/* Fetches @reference, stores it; follows one index level to the host's platform.
 * *digest is the platform manifest's digest. */
static int registry_resolve(struct registry *reg, struct store *s, const char *reference, const char *what,
			    char **digest, bool store_it)
{
	_cleanup_free_ char *buf = NULL, *mt = NULL, *d = NULL;
	struct oci_manifest m;
	const char *why;
	size_t len;
	int r;

	r = registry_get_manifest(reg, reference, &buf, &len, &mt, &d);
	if (r < 0)
		return r;
	r = oci_manifest_parse(buf, len, mt, &m, &why);
	if (r < 0)
		return log_error("%s: %s", what, why), r;
	if (m.is_index) {
		_cleanup_free_ char *member = NULL;
		r = choose_member(&m, NULL, what, &member);
		oci_manifest_done(&m);
		if (r < 0)
			return r;
		if (!store_it) {
			*digest = TAKE_PTR(member);
			return 0;
		}
		if (!store_has_blob(s, member)) {
			free(buf);
			free(mt);
			free(d);
			buf = mt = d = NULL;
			r = registry_get_manifest(reg, member, &buf, &len, &mt, &d);
			if (r < 0)
				return r;
			r = oci_manifest_parse(buf, len, mt, &m, &why);
			if (r < 0)
				return log_error("%s: %s", what, why), r;
			if (m.is_index) {
				oci_manifest_done(&m);
				return log_error("%s: nested index: refused", what), -EINVAL;
			}
			oci_manifest_done(&m);
			if ((r = put_manifest(s, buf, len, member)) < 0)
				return r;
		}
		*digest = TAKE_PTR(member);
		return 0;
	}
	oci_manifest_done(&m);
	if (store_it && (r = put_manifest(s, buf, len, d)) < 0)
		return r;
	*digest = TAKE_PTR(d);
	return 0;
}

/* Layers come from the registry while they unpack (store_rootfs_ensure_from()); with more than
 * one layer missing, a second connection (@ahead, its own client: curl handles and tokens are
 * per thread) downloads the later ones meanwhile. */
struct registry_source {
	struct registry *reg, *ahead;
};

static int fetch_from_registry(void *ud, const struct oci_descriptor *d, struct store_blob_writer *w)
{
	return registry_fetch_blob_into(((struct registry_source *)ud)->reg, d, w);
}

static int fetch_ahead_from_registry(void *ud, const struct oci_descriptor *d, struct store_blob_writer *w)
{
	return registry_fetch_blob_into(((struct registry_source *)ud)->ahead, d, w);
}

static int read_manifest_blob(struct store *s, const char *digest, struct oci_manifest *m)
{
	_cleanup_free_ char *buf = NULL;
	const char *why;
	size_t len;
	int r = store_blob_read(s, digest, OCI_JSON_MAX, &buf, &len);
	if (r < 0)
		/* `, r`: three callers deep, clang-analyzer no longer inlines log_negative_() and took
		 * this failure for a success that left @m unwritten */
		return log_error_errno(r, "manifest %s missing from the store: %m", digest), r;
	r = oci_manifest_parse(buf, len, NULL, m, &why);
	if (r < 0)
		return log_error("manifest %s: %s", digest, why), r;
	if (m->is_index) {
		oci_manifest_done(m);
		return log_error("manifest %s is an index", digest), -EINVAL;
	}
	return 0;
}

static bool rootfs_present(struct store *s, const char *digest)
{
	char id[65];
	_cleanup_free_ char *p = NULL;
	struct stat st;
	if (store_rootfs_id(digest, id) < 0)
		return false;
	p = store_rootfs_path(s, id);
	return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Every layer's uncompressed stream is checked against the config's rootfs.diff_ids while it
 * unpacks (rootfs/unpack.h): the manifest's digests name the compressed blobs, and only the
 * diff_ids say what the tree is, whatever the media type claims. Logs on failure. */
static int expect_diff_ids(struct store *s, struct oci_manifest *m)
{
	_cleanup_free_ char *buf = NULL;
	struct oci_image_config cfg;
	size_t len;
	int r;

	r = store_blob_read(s, m->config.digest, OCI_JSON_MAX, &buf, &len);
	if (r < 0)
		return log_error_errno(r, "config %s missing from the store: %m", m->config.digest);
	if ((r = oci_config_parse(buf, len, &cfg)) < 0)
		return log_error("config %s: malformed image config", m->config.digest), r;
	r = oci_manifest_set_diff_ids(m, &cfg);
	if (r == -EINVAL)
		log_error("config %s: its rootfs.diff_ids (%zu) do not name the manifest's %zu layers as "
			  "\"sha256:<64 hex>\" each", m->config.digest, strv_length(cfg.diff_ids), m->n_layers);
	oci_config_done(&cfg);
	return r;
}

/* Unpacks (if needed; layers missing from the store come from @src while they unpack) and
 * records the pin. */
static int finish(struct store *s, const char *name, const char *digest, int64_t resolved_at,
		  const struct image_opts *o, const struct store_layer_source *src, struct store_ref *pin)
{
	struct oci_manifest m;
	_cleanup_free_ char *path = NULL;
	char id[65], plat[64];
	uint64_t size = 0;
	int r;

	if ((r = read_manifest_blob(s, digest, &m)) < 0)
		return r;
	if ((r = expect_diff_ids(s, &m)) < 0) {
		oci_manifest_done(&m);
		return r;
	}
	r = store_rootfs_ensure_from(s, digest, &m, &o->lim, src, &path, &size);
	if (r < 0) {
		oci_manifest_done(&m);
		return r;
	}
	if ((r = store_rootfs_id(digest, id)) < 0) {
		oci_manifest_done(&m);
		return r;
	}
	memset(pin, 0, sizeof(*pin));
	/* the tree was there already (a second pull, a load of an image the store holds, another
	 * name): its size is what the pull that made it counted, recorded in that pin */
	if (!size)
		(void)store_rootfs_pinned_size(s, id, &size);
	pin->name = strdup(name);
	pin->digest = strdup(digest);
	pin->platform = strdup(platform_string(plat));
	pin->config = strdup(m.config.digest);
	pin->rootfs_id = strdup(id);
	pin->unpacker = strdup(UNPACK_VERSION);
	pin->resolved_at = resolved_at;
	pin->size = size;
	oci_manifest_done(&m);
	if (!pin->name || !pin->digest || !pin->platform || !pin->config || !pin->rootfs_id || !pin->unpacker) {
		store_ref_done(pin);
		return log_error_errno(-ENOMEM, "%m");
	}
	r = store_ref_write(s, pin);
	if (r < 0)
		store_ref_done(pin);
	return r;
}

/* After a failed pull: drop the manifest and config it stored unless a pin uses them, so a
 * refused or broken image leaves nothing behind (partial blobs never left tmp/). */
static void drop_unpinned(struct store *s, const char *digest)
{
	_cleanup_free_ char *buf = NULL;
	struct oci_manifest m;
	size_t len;

	if (!digest)
		return;
	if (store_blob_read(s, digest, OCI_JSON_MAX, &buf, &len) == 0 &&
	    oci_manifest_parse(buf, len, NULL, &m, NULL) == 0) {
		if (!m.is_index)
			(void)store_blob_remove_unpinned(s, m.config.digest);
		oci_manifest_done(&m);
	}
	(void)store_blob_remove_unpinned(s, digest);
}

/* Does the store hold @digest as a platform manifest with its config, and its layers or its
 * unpacked tree? Then a run or pull naming that digest needs no registry: the bytes are the
 * ones the digest names, whichever pull or load put them there. Does not log. */
static bool digest_is_local(struct store *s, const char *digest)
{
	_cleanup_free_ char *buf = NULL;
	struct oci_manifest m;
	size_t len;
	bool ok;

	if (!store_has_blob(s, digest) || store_blob_read(s, digest, OCI_JSON_MAX, &buf, &len) < 0 ||
	    oci_manifest_parse(buf, len, NULL, &m, NULL) < 0)
		return false;
	ok = !m.is_index && store_has_blob(s, m.config.digest);
	if (ok && !rootfs_present(s, digest))
		for (size_t i = 0; ok && i < m.n_layers; i++)
			ok = store_has_blob(s, m.layers[i].digest);
	oci_manifest_done(&m);
	return ok;
}

static int pull_registry(struct store *s, const struct oci_ref *ref, const struct image_opts *o, bool force,
			 struct store_ref *pin)
{
	struct registry *reg = NULL;
	struct registry_source rs = { 0 };
	struct store_layer_source src = { .fetch = fetch_from_registry, .ud = &rs };
	_cleanup_free_ char *digest = NULL;
	struct store_ref old = { 0 };
	bool have_old = store_ref_read(s, ref->name, &old) == 0, local = streq(ref->registry, IMAGE_LOCAL_REGISTRY);
	int64_t now = time(NULL), resolved_at = now;
	struct oci_manifest m;
	int r;

	if (ref->digest) {
		/* pinned by the user: nothing to resolve, never stale */
		digest = strdup(ref->digest);
		if (!digest) {
			r = -ENOMEM;
			goto out;
		}
		/* the pin under this very name (NAME@DIGEST) is what DIGEST resolved to: the same
		 * manifest, or the host's member when DIGEST names an index, which is immutable too */
		if (have_old && store_has_blob(s, old.digest) && rootfs_present(s, old.digest)) {
			free(digest);
			digest = strdup(old.digest);
			resolved_at = old.resolved_at;
			r = digest ? 0 : -ENOMEM;
			if (r == 0)
				goto done;
			goto out;
		}
		if (digest_is_local(s, digest)) {
			if (!o->quiet)
				log_info("%s: in the store already, no registry request", ref->name);
			goto done;
		}
	} else if (have_old && (local || (!force && store_pin_is_fresh(old.resolved_at, now, o->ttl_days))) &&
		   store_has_blob(s, old.digest) && rootfs_present(s, old.digest)) {
		/* a fresh pin, or a local build (aisb build -t: no registry to ask, its pin never ages),
		 * and everything present: no network at all */
		digest = strdup(old.digest);
		resolved_at = old.resolved_at;
		r = digest ? 0 : -ENOMEM;
		if (r == 0)
			goto done;
		goto out;
	}
	if (local) {
		r = log_error_errno(-ENOENT, "%s: no such local image (local builds are %s/NAME; make it with "
					     "'aisb build -t NAME')", ref->name, IMAGE_LOCAL_REGISTRY);
		goto out;
	}
	if ((r = registry_open(ref, &o->reg, &reg)) < 0)
		goto out;
	if (ref->digest) {
		/* a user digest may name an index: resolve through it to the platform manifest */
		free(digest);
		digest = NULL;
		r = registry_resolve(reg, s, ref->digest, ref->name, &digest, true);
	} else {
		r = registry_resolve(reg, s, ref->tag, ref->name, &digest, true);
		if (r == -ECONNREFUSED && have_old && store_has_blob(s, old.digest)) {
			char when[32];
			time_t t = (time_t)old.resolved_at;
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&t));
			log_warn("registry unreachable: using the pinned digest %s of %s (resolved %s)", old.digest,
				 ref->name, when);
			digest = strdup(old.digest);
			resolved_at = old.resolved_at;
			r = digest ? 0 : -ENOMEM;
		}
		/* said even with -q: what runs under this name from now on is another image */
		if (r == 0 && have_old && !streq(old.digest, digest))
			log_info("%s moved from %s to %s: the pin follows it", ref->name, old.digest, digest);
	}
	if (r == -ECONNREFUSED)
		log_error("%s is not in the image store and its registry cannot be reached: run 'aisb pull %s' "
			  "where it can (or 'aisb load -i FILE' from an archive)", ref->name, ref->name);
	if (r < 0)
		goto out;
	if ((r = read_manifest_blob(s, digest, &m)) < 0)
		goto out;
	r = registry_fetch_blob(reg, &m.config, s);
	if (r == 0 && m.n_layers > 1 && !rootfs_present(s, digest) && registry_open(ref, &o->reg, &rs.ahead) == 0)
		src.fetch_ahead = fetch_ahead_from_registry; /* without it, one layer after the other */
	oci_manifest_done(&m);
	if (r < 0)
		goto out;
done:
	rs.reg = reg;
	r = finish(s, ref->name, digest, resolved_at, o, reg ? &src : NULL, pin);
out:
	if (r < 0)
		drop_unpinned(s, digest);
	if (reg)
		log_debug("%s: %u registry request(s)", ref->name, registry_requests(reg));
	registry_free(rs.ahead);
	registry_free(reg);
	store_ref_done(&old);
	return r;
}

int image_resolve_upstream(const struct oci_ref *ref, const struct image_opts *o, char **digest)
{
	struct registry *reg = NULL;
	int r;

	if (ref->transport != OCI_TRANSPORT_REGISTRY || ref->digest)
		return log_error("%s is not a tag on a registry: nothing to re-resolve", ref->name), -EINVAL;
	if ((r = registry_open(ref, &o->reg, &reg)) < 0)
		return r;
	r = registry_resolve(reg, NULL, ref->tag, ref->name, digest, false);
	registry_free(reg);
	return r;
}

/* ---- oci: directories ---- */

static int open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* Writes DIR/blobs/sha256/<hex> into @w (not committed). Logs on failure. */
static int copy_layout_blob(int dfd, const char *digest, struct store_blob_writer *w)
{
	_cleanup_free_ char *rel = NULL, *buf = NULL;
	_cleanup_close_ int fd = -1;
	const size_t bufsize = 256u << 10;
	int r;

	if (asprintf(&rel, "blobs/sha256/%s", digest + 7) < 0 || !(buf = malloc(bufsize)))
		return log_error_errno(-ENOMEM, "%m");
	fd = open_beneath(dfd, rel, O_RDONLY);
	if (fd < 0)
		return log_error_errno(fd, "blob %s missing from the layout: %m", digest);
	for (;;) {
		ssize_t k = read(fd, buf, bufsize);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return log_error_errno(-errno, "reading blob %s: %m", digest);
		if (k == 0)
			return 0;
		/* only -EFBIG is the layout's fault: a full disk is not a bad blob */
		if ((r = store_blob_write(w, buf, (size_t)k)) == -EFBIG)
			return log_error("blob %s is larger than its descriptor says: refused", digest), -EBADMSG;
		if (r < 0)
			return log_error_errno(r, "cannot store blob %s: %m", digest);
	}
}

/* Copies DIR/blobs/sha256/<hex> into the store, verified against @d. */
static int import_dir_blob(struct store *s, int dfd, const char *digest, int64_t size)
{
	_cleanup_close_ int lock = -1;
	struct store_blob_writer *w;
	int r;

	if (!oci_digest_is_valid(digest))
		return log_error("invalid digest in the layout"), -EINVAL;
	lock = store_lock(s, "blob", digest + 7, false);
	if (lock < 0)
		return log_error_errno(lock, "cannot lock blob %s: %m", digest);
	if (store_has_blob(s, digest))
		return 0;
	if ((r = store_blob_begin(s, digest, size, &w)) < 0)
		return r;
	if ((r = copy_layout_blob(dfd, digest, w)) < 0) {
		store_blob_abort(w);
		return r;
	}
	return store_blob_commit(w, NULL);
}

/* An oci: layout's layers are read once, into the store and the unpack together
 * (store_rootfs_ensure_from()). */
static int fetch_from_layout(void *ud, const struct oci_descriptor *d, struct store_blob_writer *w)
{
	return copy_layout_blob(*(const int *)ud, d->digest, w);
}

/* Index member @member (imported from @dfd, or in the store when @dfd < 0) to the host's platform
 * manifest: the member itself, or the host's member of it when it is an index (multi-platform
 * layouts). Logs on failure. */
static int resolve_member(struct store *s, int dfd, const char *member, const char *what, char **digest)
{
	_cleanup_free_ char *buf = NULL;
	struct oci_manifest m;
	const char *why;
	size_t n;
	int r;

	r = store_blob_read(s, member, OCI_JSON_MAX, &buf, &n);
	if (r < 0)
		/* `, r`: as in read_manifest_blob(), clang-analyzer does not see log_error_errno() keep
		 * the sign this deep */
		return log_error_errno(r, "%s: manifest %s missing: %m", what, member), r;
	r = oci_manifest_parse(buf, n, NULL, &m, &why);
	if (r < 0)
		return log_error("%s: manifest %s: %s", what, member, why), r;
	if (m.is_index) {
		_cleanup_free_ char *inner = NULL;
		r = choose_member(&m, NULL, what, &inner);
		if (r == 0 && dfd >= 0) {
			for (size_t i = 0; i < m.n_manifests; i++)
				if (streq(m.manifests[i].digest, inner))
					r = import_dir_blob(s, dfd, inner, m.manifests[i].size);
		}
		oci_manifest_done(&m);
		if (r < 0)
			return r;
		*digest = TAKE_PTR(inner);
		return 0;
	}
	oci_manifest_done(&m);
	*digest = strdup(member);
	return *digest ? 0 : -ENOMEM;
}

/* Resolves an oci-layout's index.json (@index_buf) to a platform manifest digest, importing
 * manifests from @dfd (or expecting them in the store when @dfd < 0). With @name, *name is the
 * image name the chosen member records (oci_descriptor_image_name()), or NULL. */
static int resolve_layout(struct store *s, int dfd, const char *index_buf, size_t len, const char *tag,
			  const char *what, char **digest, char **name)
{
	struct oci_manifest idx;
	_cleanup_free_ char *member = NULL;
	const char *why;
	int r;

	if (name)
		*name = NULL;
	r = oci_manifest_parse(index_buf, len, OCI_MT_INDEX, &idx, &why);
	if (r < 0 || !idx.is_index) {
		if (r == 0)
			oci_manifest_done(&idx);
		return log_error("%s: index.json: %s", what, r < 0 ? why : "not an index"), -EINVAL;
	}
	r = choose_member(&idx, tag, what, &member);
	for (size_t i = 0; r >= 0 && i < idx.n_manifests; i++) {
		const struct oci_descriptor *d = &idx.manifests[i];
		if (!streq(d->digest, member) || (tag && (!d->ref_name || !streq(d->ref_name, tag))))
			continue;
		if (dfd >= 0)
			r = import_dir_blob(s, dfd, member, d->size);
		if (r >= 0 && name && !*name && oci_descriptor_image_name(d) &&
		    !(*name = strdup(oci_descriptor_image_name(d))))
			r = -ENOMEM;
		break;
	}
	oci_manifest_done(&idx);
	if (r >= 0)
		r = resolve_member(s, dfd, member, what, digest);
	if (r < 0 && name) {
		free(*name);
		*name = NULL;
	}
	return r;
}

/* The config from layout @dfd (the layers come while they unpack), or, from an archive
 * (@dfd < 0), a check that the scan stored every blob. */
static int import_manifest_blobs(struct store *s, int dfd, const char *digest)
{
	struct oci_manifest m;
	int r = read_manifest_blob(s, digest, &m);
	if (r < 0)
		return r;
	if (dfd >= 0) {
		r = import_dir_blob(s, dfd, m.config.digest, m.config.size);
	} else {
		if (!store_has_blob(s, m.config.digest))
			r = (log_error("config %s is missing from the archive", m.config.digest), -ENOENT);
		for (size_t i = 0; r == 0 && i < m.n_layers; i++)
			if (!store_has_blob(s, m.layers[i].digest))
				r = (log_error("layer %s is missing from the archive", m.layers[i].digest), -ENOENT);
	}
	oci_manifest_done(&m);
	return r;
}

static int pull_oci_dir(struct store *s, const struct oci_ref *ref, const struct image_opts *o, struct store_ref *pin)
{
	_cleanup_close_ int dfd = open(ref->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL, *digest = NULL;
	size_t len;
	int r;

	if (dfd < 0)
		return log_error_errno(-errno, "cannot open the OCI layout '%s': %m", ref->path);
	r = read_file_at(dfd, "index.json", OCI_JSON_MAX, &buf, &len);
	if (r < 0)
		return log_error_errno(r, "'%s' is not an OCI layout (index.json: %m)", ref->path);
	if ((r = resolve_layout(s, dfd, buf, len, ref->tag, ref->name, &digest, NULL)) < 0)
		return r;
	r = import_manifest_blobs(s, dfd, digest);
	if (r == 0)
		r = finish(s, ref->name, digest, time(NULL), o, &(struct store_layer_source){ .fetch = fetch_from_layout, .ud = &dfd },
			   pin);
	if (r < 0)
		drop_unpinned(s, digest);
	return r;
}

/* ---- oci-archive: and docker-archive: ---- */

struct member {
	char *name;
	char *digest;
	int64_t size;
};

struct members {
	struct member *v;
	size_t n;
	char *index_json, *manifest_json;
	size_t index_len, manifest_len;
};

static void members_done(struct members *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].name);
		free(m->v[i].digest);
	}
	free(m->v);
	free(m->index_json);
	free(m->manifest_json);
	memset(m, 0, sizeof(*m));
}

static const struct member *members_find(const struct members *m, const char *name)
{
	_cleanup_free_ char *norm = NULL;
	if (unpack_path_normalize(name, &norm) < 0)
		return NULL;
	for (size_t i = 0; i < m->n; i++)
		if (streq(m->v[i].name, norm))
			return &m->v[i];
	return NULL;
}

static void archive_freep(struct archive **a)
{
	if (*a)
		archive_read_free(*a);
}

/* Reads every regular file of the archive into the store as a blob (hashed as it streams); keeps
 * index.json and manifest.json in memory too. A "blobs/sha256/<hex>" member must hash to <hex>. */
static int scan_archive(struct store *s, const char *file, const char *what, struct members *mb)
{
	_cleanup_(archive_freep) struct archive *a = archive_read_new();
	_cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC);
	struct archive_entry *e;
	int r;

	if (fd < 0)
		return log_error_errno(-errno, "cannot open '%s': %m", file);
	if (!a)
		return dl_load(&dl_libarchive) < 0 ? -ELIBACC : -ENOMEM; /* dl_load() said which */
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	if (archive_read_open_fd(a, fd, 1 << 20) != ARCHIVE_OK)
		return log_error("%s: not a tar archive: %s", what, archive_error_string(a)), -EINVAL;
	for (;;) {
		_cleanup_free_ char *name = NULL, *digest = NULL;
		struct store_blob_writer *w;
		int64_t size;
		int k = archive_read_next_header(a, &e);
		bool is_index, is_manifest;
		struct member *nv;

		if (k == ARCHIVE_EOF)
			break;
		if (k != ARCHIVE_OK && k != ARCHIVE_WARN)
			return log_error("%s: corrupt archive: %s", what, archive_error_string(a)), -EINVAL;
		if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e))
			continue;
		if (unpack_path_normalize(archive_entry_pathname(e), &name) < 0)
			return log_error("%s: member '%s' has an unsafe name: refused", what, archive_entry_pathname(e)),
			       -EPERM;
		size = archive_entry_size(e);
		if (size < 0 || (uint64_t)size > BLOB_MAX)
			return log_error("%s: member '%s' is too large", what, name), -E2BIG;
		is_index = streq(name, "index.json");
		is_manifest = streq(name, "manifest.json");
		if ((is_index || is_manifest) && size > (int64_t)OCI_JSON_MAX)
			return log_error("%s: %s is too large", what, name), -E2BIG;
		if ((r = store_blob_begin(s, NULL, size, &w)) < 0)
			return r;
		{
			const void *buf;
			size_t len;
			la_int64_t off;
			char *keep = (is_index || is_manifest) ? calloc(1, (size_t)size + 1) : NULL;
			for (;;) {
				k = archive_read_data_block(a, &buf, &len, &off);
				if (k == ARCHIVE_EOF)
					break;
				if (k != ARCHIVE_OK) {
					free(keep);
					store_blob_abort(w);
					return log_error("%s: reading '%s': %s", what, name, archive_error_string(a)), -EIO;
				}
				if ((uint64_t)off != store_blob_written(w) || store_blob_write(w, buf, len) < 0) {
					free(keep);
					store_blob_abort(w);
					return log_error("%s: member '%s' is malformed", what, name), -EINVAL;
				}
				if (keep)
					memcpy(keep + off, buf, len);
			}
			if (is_index) {
				free(mb->index_json);
				mb->index_json = keep;
				mb->index_len = (size_t)size;
			} else if (is_manifest) {
				free(mb->manifest_json);
				mb->manifest_json = keep;
				mb->manifest_len = (size_t)size;
			}
		}
		if ((r = store_blob_commit(w, &digest)) < 0)
			return r;
		if (strncmp(name, "blobs/sha256/", 13) == 0 && !streq(name + 13, digest + 7))
			return log_error("%s: blob '%s' hashes to %s: refused (corrupted)", what, name, digest), -EBADMSG;
		nv = realloc(mb->v, (mb->n + 1) * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		mb->v = nv;
		mb->v[mb->n++] = (struct member){ .name = TAKE_PTR(name), .digest = TAKE_PTR(digest), .size = size };
	}
	return 0;
}

/* One image of an archive: its platform manifest (stored by the scan) and the names the archive
 * records for it, as written there (strv). */
struct archive_image {
	char *digest;
	char **names;
};

struct archive_images {
	struct archive_image *v;
	size_t n;
};

static void archive_images_done(struct archive_images *ai)
{
	for (size_t i = 0; i < ai->n; i++) {
		free(ai->v[i].digest);
		strv_free(ai->v[i].names);
	}
	free(ai->v);
	memset(ai, 0, sizeof(*ai));
}

/* Adds image @digest with @names (copied; NULL: none); an image already there gains the names. */
static int archive_images_add(struct archive_images *ai, const char *digest, char *const *names)
{
	struct archive_image *img = NULL, *nv;

	for (size_t i = 0; i < ai->n && !img; i++)
		if (streq(ai->v[i].digest, digest))
			img = &ai->v[i];
	if (!img) {
		nv = realloc(ai->v, (ai->n + 1) * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		ai->v = nv;
		img = &ai->v[ai->n];
		*img = (struct archive_image){ .digest = strdup(digest), .names = calloc(1, sizeof(char *)) };
		ai->n++;
		if (!img->digest || !img->names)
			return -ENOMEM;
	}
	for (size_t i = 0; names && names[i]; i++)
		if (!strv_contains(img->names, names[i]) && strv_push(&img->names, names[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* `docker save`: manifest.json names a config file and layer tars; synthesises and stores the OCI
 * manifest of image @di. Logs on failure. */
static int docker_image_manifest(struct store *s, const char *what, const struct members *mb,
				 const struct oci_docker_image *di, char **digest)
{
	_cleanup_free_ char *json = NULL;
	const struct member *cm = members_find(mb, di->config_path);
	size_t jlen = 0;
	FILE *f;

	if (!cm)
		return log_error("%s: config '%s' missing", what, di->config_path), -ENOENT;
	f = open_memstream(&json, &jlen);
	if (!f)
		return log_error_errno(-ENOMEM, "%m");
	fprintf(f, "{\"schemaVersion\":2,\"mediaType\":\"%s\",\"config\":{\"mediaType\":\"%s\",\"digest\":\"%s\","
		   "\"size\":%lld},\"layers\":[", OCI_MT_MANIFEST, OCI_MT_CONFIG, cm->digest, (long long)cm->size);
	for (size_t i = 0; di->layer_paths[i]; i++) {
		const struct member *lm = members_find(mb, di->layer_paths[i]);
		if (!lm) {
			fclose(f);
			return log_error("%s: layer '%s' missing", what, di->layer_paths[i]), -ENOENT;
		}
		fprintf(f, "%s{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"%s\",\"size\":%lld}",
			i ? "," : "", lm->digest, (long long)lm->size);
	}
	fputs("]}", f);
	if (fclose(f) != 0)
		return log_error_errno(-ENOMEM, "%m");
	return store_blob_put(s, json, jlen, digest);
}

/* The images of a docker archive, with every RepoTags entry; @all: every image (aisb load), else
 * the only one (a pull of docker-archive:FILE). Logs on failure. */
static int docker_archive_images(struct store *s, const char *what, const struct members *mb, bool all,
				 struct archive_images *ai)
{
	struct oci_docker_image *di = NULL;
	size_t n = 0;
	int r;

	if (!mb->manifest_json)
		return log_error("%s: no manifest.json: not a docker-archive", what), -EINVAL;
	r = oci_docker_archive_parse(mb->manifest_json, mb->manifest_len, &di, &n);
	if (r < 0)
		return log_error("%s: manifest.json: %s", what, r == -E2BIG ? "too many images" : "malformed"),
		       r == -ENOMEM ? r : -EINVAL;
	if (!all && n != 1)
		r = (log_error("%s holds %zu images: 'aisb load -i FILE' loads each under its names", what, n), -EINVAL);
	for (size_t i = 0; r == 0 && i < n; i++) {
		_cleanup_free_ char *digest = NULL;
		if ((r = docker_image_manifest(s, what, mb, &di[i], &digest)) == 0)
			r = archive_images_add(ai, digest, di[i].repo_tags);
	}
	oci_docker_archive_done(di, n);
	return r;
}

/* The images of an OCI archive. One: the member @tag names (ref.name), or the only one, or the
 * host's of a multi-platform index; @all (aisb load, no tag): every member that records an
 * image name (oci_descriptor_image_name()), for this platform. Logs on failure. */
static int oci_archive_images(struct store *s, const char *what, const struct members *mb, const char *tag,
			      bool all, struct archive_images *ai)
{
	_cleanup_free_ char *digest = NULL, *name = NULL;
	struct oci_manifest idx;
	const char *os, *arch, *variant;
	size_t named = 0;
	int r;

	if (!mb->index_json)
		return log_error("%s: no index.json: not an OCI archive", what), -EINVAL;
	if (oci_manifest_parse(mb->index_json, mb->index_len, OCI_MT_INDEX, &idx, NULL) == 0) {
		for (size_t i = 0; idx.is_index && i < idx.n_manifests; i++)
			named += oci_descriptor_image_name(&idx.manifests[i]) != NULL;
		if (!all || tag || !named) {
			oci_manifest_done(&idx);
			goto one; /* resolve_layout() says what is wrong with the index, if anything */
		}
	} else {
		goto one;
	}
	oci_host_platform(&os, &arch, &variant);
	r = 0;
	for (size_t i = 0; r == 0 && i < idx.n_manifests; i++) {
		struct oci_descriptor *d = &idx.manifests[i];
		struct oci_manifest one = { .is_index = true, .manifests = d, .n_manifests = 1 };
		const char *nm = oci_descriptor_image_name(d);
		char *names[] = { (char *)nm, NULL };
		if (oci_index_choose(&one, os, arch, variant, NULL) < 0)
			continue; /* another platform's member */
		if (!nm) {
			log_warn("%s: index.json member %s records no image name: not loaded (aisb pull "
				 "oci-archive:FILE:TAG takes it by its tag)", what, d->digest);
			continue;
		}
		free(digest);
		digest = NULL;
		if ((r = resolve_member(s, -1, d->digest, what, &digest)) == 0)
			r = archive_images_add(ai, digest, names);
	}
	oci_manifest_done(&idx);
	return r;
one:
	if ((r = resolve_layout(s, -1, mb->index_json, mb->index_len, tag, what, &digest, &name)) < 0)
		return r;
	return archive_images_add(ai, digest, name ? (char *[]){ name, NULL } : NULL);
}

/* The registry name @recorded gives image @digest in the store: canonical (podman's
 * normalisation), or NULL when it is not a registry reference or its digest is another image's
 * (said, naming the archive @what). Does not fail otherwise. */
static char *usable_name(const char *what, const char *recorded, const char *digest)
{
	struct oci_ref r;
	char *out = NULL;

	if (strlen(recorded) < 512 && oci_ref_parse(recorded, &r) == 0) {
		if (r.transport == OCI_TRANSPORT_REGISTRY && (!r.digest || streq(r.digest, digest)))
			out = strdup(r.name);
		oci_ref_done(&r);
	}
	if (!out)
		log_warn("%s: ignoring the recorded name '%s' (not a registry reference of this image)", what, recorded);
	return out;
}

/* Pins @digest (its blobs in the store) under @name, holding that name's ref lock as a pull
 * does unless @locked (the caller holds it: image_pull() of that name), and appends the pin to
 * *pins. Logs on failure. */
static int pin_archive_image(struct store *s, const char *name, bool locked, const char *digest,
			     const struct image_opts *o, struct store_ref **pins, size_t *n_pins)
{
	_cleanup_close_ int lock = -1;
	struct store_ref pin, *nv;
	char key[65];
	int r;

	if (store_rootfs_id(name, key) < 0)
		return -ELIBACC;
	/* flock(2) is per open file: taking the caller's lock again would wait for ever */
	lock = locked ? -1 : store_lock(s, "ref", key, false);
	if (!locked && lock < 0)
		return log_error_errno(lock, "cannot lock '%s': %m", name);
	if ((r = finish(s, name, digest, time(NULL), o, NULL, &pin)) < 0)
		return r;
	nv = realloc(*pins, (*n_pins + 1) * sizeof(*nv));
	if (!nv) {
		store_ref_done(&pin);
		return log_error_errno(-ENOMEM, "%m");
	}
	*pins = nv;
	(*pins)[(*n_pins)++] = pin;
	return 0;
}

/* Scans archive @ref (TRANSPORT:FILE[:TAG]) into the store and pins its images: each under
 * every usable name it records; @pin_source: the (one) image also under @ref's own name (a pull
 * of TRANSPORT:FILE), else that name only when the archive records none (aisb load). The
 * caller holds the store lock shared. Logs on failure. */
static int import_archive(struct store *s, const struct oci_ref *ref, const struct image_opts *o, bool pin_source,
			  struct store_ref **pins, size_t *n_pins)
{
	struct members mb = { 0 };
	struct archive_images ai = { 0 };
	struct oci_ref dref = { 0 };
	bool docker = ref->transport == OCI_TRANSPORT_DOCKER_ARCHIVE, fallback_used = false;
	_cleanup_free_ char *dsrc = NULL;
	int r;

	*pins = NULL;
	*n_pins = 0;
	if ((r = scan_archive(s, ref->path, ref->name, &mb)) < 0)
		goto out;
	if (!pin_source && !mb.index_json && mb.manifest_json) {
		/* aisb load of a docker archive (podman save's default format): named so */
		docker = true;
		if (asprintf(&dsrc, "docker-archive:%s", ref->path) < 0) {
			dsrc = NULL;
			r = log_error_errno(-ENOMEM, "%m");
			goto out;
		}
		if ((r = oci_ref_parse(dsrc, &dref)) < 0) {
			log_error("'%s' is not a usable archive path", ref->path);
			goto out;
		}
		ref = &dref;
	}
	r = docker ? docker_archive_images(s, ref->name, &mb, !pin_source, &ai)
		   : oci_archive_images(s, ref->name, &mb, ref->tag, !pin_source, &ai);
	if (r == 0 && ai.n == 0)
		r = (log_error("%s records no image name for this platform: nothing loaded (aisb pull "
			       "oci-archive:FILE:TAG takes one by its tag)", ref->name), -ENOENT);
	if (r == 0) {
		/* each name is a pin file: a manifest.json of 4 MiB could ask for 100 000 of them */
		size_t names = 0;
		for (size_t i = 0; i < ai.n; i++)
			names += strv_length(ai.v[i].names);
		if (names > ARCHIVE_NAMES_MAX)
			r = (log_error("%s records %zu image names, more than %u: refused", ref->name, names,
				       ARCHIVE_NAMES_MAX), -E2BIG);
	}
	for (size_t i = 0; r == 0 && i < ai.n; i++) {
		const struct archive_image *img = &ai.v[i];
		size_t before = *n_pins;
		if ((r = import_manifest_blobs(s, -1, img->digest)) < 0)
			break;
		if (pin_source && (r = pin_archive_image(s, ref->name, true, img->digest, o, pins, n_pins)) < 0)
			break;
		for (size_t k = 0; r == 0 && img->names[k]; k++) {
			_cleanup_free_ char *name = usable_name(ref->name, img->names[k], img->digest);
			bool dup = false;
			for (size_t j = before; name && j < *n_pins; j++)
				dup |= streq((*pins)[j].name, name);
			if (name && !dup)
				r = pin_archive_image(s, name, false, img->digest, o, pins, n_pins);
		}
		if (r == 0 && *n_pins == before && fallback_used) {
			/* the file's name is one pin: a second image would take it from the first */
			log_warn("%s records no registry name for image %s either: not loaded (the archive's "
				 "name pins one image)", ref->name, img->digest);
		} else if (r == 0 && *n_pins == before) {
			if (!o->quiet)
				log_info("%s records no registry name for image %s: pinned as %s", ref->name, img->digest,
					 ref->name);
			r = pin_archive_image(s, ref->name, false, img->digest, o, pins, n_pins);
			fallback_used = true;
		}
	}
	if (r < 0)
		for (size_t i = 0; i < ai.n; i++)
			drop_unpinned(s, ai.v[i].digest);
out:
	archive_images_done(&ai);
	members_done(&mb);
	oci_ref_done(&dref);
	return r;
}

static void pins_free(struct store_ref *pins, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_ref_done(&pins[i]);
	free(pins);
}

/* A pull of TRANSPORT:FILE[:TAG]: one image, pinned under that name and the names it records. */
static int pull_archive(struct store *s, const struct oci_ref *ref, const struct image_opts *o, struct store_ref *pin)
{
	struct store_ref *pins = NULL;
	size_t n = 0;
	int r = import_archive(s, ref, o, true, &pins, &n);

	memset(pin, 0, sizeof(*pin));
	if (r == 0) {
		*pin = pins[0]; /* the pin under ref->name: pinned first */
		memset(&pins[0], 0, sizeof(pins[0]));
	}
	pins_free(pins, n);
	return r;
}

/* ---- entry points ---- */

int image_pull(struct store *s, const struct oci_ref *ref, const struct image_opts *o, bool force,
	       struct store_ref *pin)
{
	_cleanup_close_ int gc = -1, reflock = -1;
	char key[65];

	/* store lock shared against gc; ref lock so a concurrent pull of the same name waits and then
	 * finds a fresh pin instead of resolving again */
	gc = store_lock(s, "store", "gc", true);
	if (gc < 0)
		return log_error_errno(gc, "cannot lock the image store: %m");
	if (store_rootfs_id(ref->name, key) < 0)
		return -ELIBACC;
	reflock = store_lock(s, "ref", key, false);
	if (reflock < 0)
		return log_error_errno(reflock, "cannot lock '%s': %m", ref->name);
	switch (ref->transport) {
	case OCI_TRANSPORT_REGISTRY:
		return pull_registry(s, ref, o, force, pin);
	case OCI_TRANSPORT_OCI_DIR:
		return pull_oci_dir(s, ref, o, pin);
	case OCI_TRANSPORT_OCI_ARCHIVE:
	case OCI_TRANSPORT_DOCKER_ARCHIVE:
		return pull_archive(s, ref, o, pin);
	default:
		return -EINVAL;
	}
}

int image_load_archive(struct store *s, const char *file, const struct image_opts *o, struct store_ref **pins,
		       size_t *n_pins)
{
	_cleanup_free_ char *src = NULL;
	_cleanup_close_ int gc = -1;
	struct oci_ref aref = { 0 };
	int r;

	*pins = NULL;
	*n_pins = 0;
	if (access(file, R_OK) < 0)
		return log_error_errno(-errno, "cannot read '%s': %m", file);
	/* oci-archive: for now; import_archive() decides from the members the scan finds */
	if (asprintf(&src, "oci-archive:%s", file) < 0)
		return log_error_errno(-ENOMEM, "%m");
	if (oci_ref_parse(src, &aref) < 0 || aref.tag)
		r = (log_error("'%s' is not a usable archive path", file), -EINVAL);
	else if ((gc = store_lock(s, "store", "gc", true)) < 0)
		r = log_error_errno(gc, "cannot lock the image store: %m");
	else
		r = import_archive(s, &aref, o, false, pins, n_pins);
	oci_ref_done(&aref);
	return r;
}

int image_load_config(struct store *s, const struct store_ref *pin, struct oci_image_config *cfg)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	memset(cfg, 0, sizeof(*cfg));
	if (!pin->config)
		return log_error("%s: pin has no config", pin->name), -EINVAL;
	r = store_blob_read(s, pin->config, OCI_JSON_MAX, &buf, &len);
	if (r < 0)
		return log_error_errno(r, "%s: config %s missing from the store: %m", pin->name, pin->config);
	r = oci_config_parse(buf, len, cfg);
	if (r < 0)
		return log_error("%s: malformed image config", pin->name), r;
	return 0;
}

/* A short name (no registry typed) that a local build answers to: "jq" finds "localhost/jq"
 * when that pin exists, as podman searches localhost first. Then *@ref is replaced by the local
 * reference. Does not log. */
static bool prefer_local_build(struct store *s, const char *refstr, struct oci_ref *ref)
{
	_cleanup_free_ char *cand = NULL;
	struct oci_ref local;
	struct store_ref pin;

	if (ref->transport != OCI_TRANSPORT_REGISTRY || !ref->short_name ||
	    asprintf(&cand, "%s/%s", IMAGE_LOCAL_REGISTRY, refstr) < 0) {
		cand = NULL;
		return false;
	}
	if (oci_ref_parse(cand, &local) < 0)
		return false;
	if (store_ref_read(s, local.name, &pin) < 0) {
		oci_ref_done(&local);
		return false;
	}
	store_ref_done(&pin);
	oci_ref_done(ref);
	*ref = local;
	return true;
}

int image_find_pin(struct store *s, const char *refstr, struct store_ref *pin)
{
	struct oci_ref ref;
	int r = oci_ref_parse(refstr, &ref);
	if (r < 0)
		return r;
	(void)prefer_local_build(s, refstr, &ref);
	r = store_ref_read(s, ref.name, pin);
	oci_ref_done(&ref);
	return r;
}

/* The run's fast path: @ref's pin already names a complete tree this unpacker made, and nothing
 * needs resolving (a registry pin that is fresh, names the digest the user gave, or is a local
 * build). Then *@pin is filled and the caller skips image_pull(): no ref lock, no manifest
 * re-read, no pin rewrite, no hashing (measured: the last made every --image run load
 * libcrypto). The tree's existence is checked again under its lock by the caller. Does not log. */
static bool pin_usable_now(struct store *s, const struct oci_ref *ref, const struct image_opts *o,
			   struct store_ref *pin)
{
	struct stat st;
	_cleanup_free_ char *dir = NULL;
	bool ok;

	if (ref->transport != OCI_TRANSPORT_REGISTRY || store_ref_read(s, ref->name, pin) < 0)
		return false;
	ok = pin->unpacker && streq(pin->unpacker, UNPACK_VERSION) && pin->config && pin->rootfs_id &&
	     strlen(pin->rootfs_id) == 64 && strspn(pin->rootfs_id, "0123456789abcdef") == 64 &&
	     /* a NAME@DIGEST pin never ages: DIGEST is in its name (for an index, the pin holds the
	      * host's member) */
	     (streq(ref->registry, IMAGE_LOCAL_REGISTRY) || ref->digest ||
	      store_pin_is_fresh(pin->resolved_at, time(NULL), o->ttl_days)) &&
	     store_has_blob(s, pin->config) && (dir = store_rootfs_path(s, pin->rootfs_id)) &&
	     stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
	if (!ok)
		store_ref_done(pin);
	return ok;
}

int image_prepare_rootfs(const char *refstr, const struct image_opts *o, char **rootfs_dir,
			 struct oci_image_config *cfg, int *lock_fd)
{
	struct oci_ref ref;
	struct store *s = NULL;
	struct store_ref pin = { 0 };
	int r, lock = -1;

	*rootfs_dir = NULL;
	*lock_fd = -1;
	memset(cfg, 0, sizeof(*cfg));
	if (oci_ref_parse(refstr, &ref) < 0)
		return log_error("'%s' is not an image reference (e.g. debian:12, HOST:PORT/NAME:TAG, "
				 "NAME@sha256:..., oci:DIR[:TAG])", refstr), -EINVAL;
	if ((r = store_open(o->store_root, &s)) < 0)
		goto out;
	if (prefer_local_build(s, refstr, &ref) && !o->quiet)
		log_info("%s: the local build %s", refstr, ref.name);
	for (int attempt = 0;; attempt++) {
		bool fast = attempt == 0 && pin_usable_now(s, &ref, o, &pin);
		_cleanup_free_ char *dir = NULL;
		struct stat st;

		if (!fast && (r = image_pull(s, &ref, o, false, &pin)) < 0)
			goto out;
		lock = store_lock(s, "rootfs", pin.rootfs_id, true);
		if (lock < 0) {
			r = log_error_errno(lock, "cannot lock rootfs %s: %m", pin.rootfs_id);
			goto out;
		}
		/* under the lock the tree cannot go; it may have gone (rmi, gc) before it was taken */
		if (!fast || ((dir = store_rootfs_path(s, pin.rootfs_id)) && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)))
			break;
		close(lock);
		lock = -1;
		store_ref_done(&pin);
	}
	if ((r = image_load_config(s, &pin, cfg)) < 0)
		goto out;
	*rootfs_dir = store_rootfs_path(s, pin.rootfs_id);
	if (!*rootfs_dir) {
		r = -ENOMEM;
		oci_config_done(cfg);
		goto out;
	}
	*lock_fd = TAKE_FD(lock);
out:
	if (lock >= 0)
		close(lock);
	store_ref_done(&pin);
	store_free(s);
	oci_ref_done(&ref);
	return r;
}
