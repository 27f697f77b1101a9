// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-build.c — `aisb build`: read and check the recipe and context, preview, or build.
 *
 * aisb build [-f FILE] [-t NAME] [--build-arg K=V]... [--install PKG]... [--builder native|podman]
 *            [--allow ENTRY]... [--allow-file FILE]... [--add-host NAME=IP]...
 *            [--print-containerfile] [--dry-run] [CONTEXT]
 *
 * Everything that can be checked before the store is touched is checked first (the recipe
 * subset, build args, the ignore file, every COPY source against the context, the allowlist), so
 * a bad recipe or entry fails with 78 at once and nothing is written. See docs/build.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "build/containerfile.h"
#include "build/commit.h"
#include "build/compress.h"
#include "build/context.h"
#include "build/layer.h"
#include "build/native.h"
#include "build/podman.h"
#include "build/podman-netns.h"
#include "build/recipe.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/regflags.h"
#include "cli/resolve.h"
#include "net/netplan.h"
#include "ns/limits.h"
#include "ns/mounts.h"
#include "ns/userns.h"
#include "util/dl.h"
#include "rootfs/image.h"
#include "rootfs/ref.h"
#include "rootfs/store.h"
#include "util/homedir.h"
#include "util/log.h"
#include "util/util.h"

enum build_builder { BUILDER_NATIVE, BUILDER_PODMAN, BUILDER_MAX };

/* The image's times: `created` and the layer's mtimes (the layer_times in native_commit()) */
enum build_time_from {
	TIME_DEFAULT,   /* created 0; what the build wrote gets mtime 0, the context's keep theirs */
	TIME_SDE,       /* SOURCE_DATE_EPOCH: created from it; later mtimes clamped to it */
	TIME_TIMESTAMP, /* --timestamp (podman's): created and every mtime from it */
	TIME_MAX
};

/* Latest accepted time: 9999-12-31T23:59:59Z, so that `created` stays 20 characters. */
#define BUILD_TIME_MAX 253402300799LL

struct build_opts {
	const char *file;
	char *found_file;                  /* CONTEXT/Containerfile or Dockerfile, when -f was not given */
	bool builtin;                      /* --default: the built-in recipe, even with a Containerfile */
	const char *tag;
	char **build_args;
	char **install;
	char **allow;
	char **allow_files;
	char **add_hosts;
	enum build_builder builder;
	bool builder_explicit;
	bool podman_no_network;            /* the fallback: podman with RUN offline, as native would be */
	const char *context;
	bool context_given;                /* CONTEXT was a word of the command line */
	bool print_containerfile;
	bool dry_run;
	bool help;
	struct regflags reg;               /* FROM's --tls-verify, --cert-dir, --authfile */
	enum layer_compression comp;       /* --compression-format (default gzip; build/compress.h) */
	int comp_level;                    /* --compression-level, or -1: the format's default */
	enum build_time_from time_from;    /* where the image's times come from (docs/images.md) */
	int64_t timestamp;                 /* --timestamp or SOURCE_DATE_EPOCH; 0 otherwise */
};

static void build_opts_done(struct build_opts *o)
{
	free(o->found_file);
	strv_free(o->build_args);
	strv_free(o->install);
	strv_free(o->allow);
	strv_free(o->allow_files);
	strv_free(o->add_hosts);
	regflags_done(&o->reg);
}

static void print_help(void)
{
	printf("Usage: aisb build [OPTIONS] [CONTEXT]\n"
	       "\n"
	       "Build an image from a Containerfile subset (FROM RUN ENV ARG WORKDIR COPY LABEL USER\n"
	       "ENTRYPOINT CMD): -f FILE, else CONTEXT/Containerfile or CONTEXT/Dockerfile, as podman\n"
	       "does; --default (or a context with neither file) builds the built-in agent recipe.\n"
	       "\n"
	       "  -f, --file FILE            the Containerfile (default: CONTEXT/Containerfile,\n"
	       "                             CONTEXT/Dockerfile)\n"
	       "      --compression-format gzip|zstd|none  the layer's compression (default gzip)\n"
	       "      --compression-level N  gzip 1-9 (default 6), zstd 1-19 (default 3)\n"
	       "      --timestamp SECONDS    the image's created time and every file's mtime (as podman);\n"
	       "                             default: SOURCE_DATE_EPOCH, else 0 (docs/images.md)\n"
	       "      --default              build the built-in agent recipe, even if CONTEXT has a\n"
	       "                             Containerfile\n"
	       "  -t, --tag NAME             name the result in the image store\n"
	       "      --build-arg K=V        set an ARG the recipe declares\n"
	       "      --install PKG          add an Ubuntu package to the built-in recipe\n"
	       "      --builder native|podman  which builder (default: native)\n"
	       "      --allow ENTRY          let RUN reach ENTRY through the network gate (names:\n"
	       "                             NAME, *.NAME, NAME:PORT); nothing by default\n"
	       "      --allow-file FILE      allow entries from FILE, one per line\n"
	       "      --add-host NAME=IP     pin NAME to IP for the gate (NAME still needs --allow)\n"
	       "      --print-containerfile  print the recipe and exit; touches nothing\n"
	       "      --dry-run              check recipe and context, print the steps; builds nothing\n"
	       "      --tls-verify=false     FROM's registry: no TLS checks, plain http allowed (as pull)\n"
	       "      --cert-dir DIR         FROM's registry: trust DIR/*.crt instead of the system CAs\n"
	       "      --authfile FILE        FROM's registry: credentials from FILE first\n"
	       "  -h, --help                 this help\n"
	       "\n"
	       "CONTEXT is the directory COPY reads from (default: the current directory);\n"
	       ".containerignore or .dockerignore in it leaves files out.\n");
}

/* A full check is the store's reference parser's (issue 4); this only keeps blanks, control
 * characters and absurd lengths out of messages and file names. */
static bool tag_is_plausible(const char *t)
{
	size_t n = strlen(t);

	if (n == 0 || n > 255 || t[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)t[i] <= ' ' || t[i] == 0x7f || t[i] == '\\')
			return false;
	return true;
}

/* Seconds since the epoch, decimal, 0..BUILD_TIME_MAX. Does not log. */
static int parse_epoch(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v > BUILD_TIME_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_args(struct build_opts *o, int argc, char **argv)
{
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;
	int r = 0, rf;

	cli_args_init(&args, "build", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return -EINVAL;
		if (k == CLI_ARG_WORD && o->context_given)
			return log_error("build: one CONTEXT only, got also '%s'", val);
		if (k == CLI_ARG_WORD) {
			o->context = val;
			o->context_given = true;
		} else if (cli_flag_is(f, "file")) {
			o->file = val;
		} else if (cli_flag_is(f, "tag")) {
			o->tag = val;
		} else if (cli_flag_is(f, "build-arg")) {
			if (!strchr(val, '='))
				return log_error("--build-arg '%s' needs a value: --build-arg NAME=VALUE "
						 "(values are never taken from the environment)", val);
			r = strv_push(&o->build_args, val);
		} else if (cli_flag_is(f, "install")) {
			r = strv_push(&o->install, val);
		} else if (cli_flag_is(f, "builder")) {
			o->builder_explicit = true;
			if (streq(val, "native"))
				o->builder = BUILDER_NATIVE;
			else if (streq(val, "podman"))
				o->builder = BUILDER_PODMAN;
			else
				return log_error("--builder '%s': use native or podman", val);
		} else if (cli_flag_is(f, "allow")) {
			r = strv_push(&o->allow, val);
		} else if (cli_flag_is(f, "allow-file")) {
			r = strv_push(&o->allow_files, val);
		} else if (cli_flag_is(f, "add-host")) {
			r = strv_push(&o->add_hosts, val);
		} else if (cli_flag_is(f, "print-containerfile")) {
			o->print_containerfile = true;
		} else if (cli_flag_is(f, "dry-run")) {
			o->dry_run = true;
		} else if (cli_flag_is(f, "default")) {
			o->builtin = true;
		} else if (cli_flag_is(f, "compression-format")) {
			if (layer_compression_parse(val, &o->comp) < 0)
				return log_error("--compression-format '%s': use gzip, zstd or none", val);
		} else if (cli_flag_is(f, "compression-level")) {
			if ((o->comp_level = layer_compression_level_parse(val)) < 0)
				return log_error("--compression-level '%s': a number, 1-9 for gzip, 1-19 for zstd", val);
		} else if (cli_flag_is(f, "timestamp")) {
			if (parse_epoch(val, &o->timestamp) < 0)
				return log_error("--timestamp '%s': seconds since 1970-01-01 UTC, 0-%lld", val,
						 BUILD_TIME_MAX);
			o->time_from = TIME_TIMESTAMP;
		} else if ((rf = regflag_by_name(f->name)) >= 0) {
			if (regflags_collect(&o->reg, (enum regflag)rf, val) < 0)
				return -EINVAL;
		} else if (cli_flag_is(f, "help")) {
			o->help = true;
		} else {
			(void)cli_flag_unhandled("build", f);
			return -EINVAL;
		}
		if (r < 0)
			return log_error_errno(r, "Out of memory");
	}
	if (o->time_from == TIME_DEFAULT) {
		/* reproducible-builds.org: set and not a plain number is an error, never ignored */
		const char *sde = hostenv_get("SOURCE_DATE_EPOCH");
		if (sde && *sde) {
			if (parse_epoch(sde, &o->timestamp) < 0)
				return log_error("SOURCE_DATE_EPOCH='%.32s' is not seconds since 1970-01-01 UTC "
						 "(0-%lld): fix or unset it", sde, BUILD_TIME_MAX);
			o->time_from = TIME_SDE;
		}
	}
	{
		int lv = layer_compression_level(o->comp, o->comp_level);
		if (lv < 0)
			return log_error("--compression-level %d does not fit --compression-format %s (gzip 1-9, zstd "
					 "1-19, none takes no level)", o->comp_level, layer_compression_name(o->comp));
		o->comp_level = lv;
	}
	/* a CONTEXT that is not a directory is a typo, never a reason to build the built-in recipe */
	if (!o->help) {
		struct stat st;
		if (stat(o->context, &st) < 0)
			return log_error_errno(-errno, "build: the context directory '%s': %m", o->context);
		if (!S_ISDIR(st.st_mode))
			return log_error("build: the context '%s' is not a directory", o->context);
	}
	if (o->file && o->builtin)
		return log_error("-f %s and --default name two recipes: pick one", o->file);
	if (o->file && o->install)
		return log_error("--install adds packages to the built-in recipe; with -f, write them in the file");
	/* As podman does: without -f, CONTEXT/Containerfile, else CONTEXT/Dockerfile. The built-in
	 * recipe is reached by --default, or when the context has neither. */
	if (!o->file && !o->builtin) {
		static const char *const files[] = { "Containerfile", "Dockerfile" };
		for (size_t i = 0; i < ELEMENTSOF(files) && !o->found_file; i++) {
			_cleanup_free_ char *p = path_join(o->context, files[i]);
			if (!p)
				return log_error_errno(-ENOMEM, "Out of memory");
			if (access(p, F_OK) == 0)
				o->found_file = TAKE_PTR(p);
		}
		if (o->found_file && o->install)
			return log_error("--install adds packages to the built-in recipe, but '%s' is what this "
					 "builds; pass --default to build the built-in recipe", o->found_file);
		o->file = o->found_file;
	}
	if (o->tag && !tag_is_plausible(o->tag))
		return log_error("-t '%s' is not an image name", o->tag);
	return 0;
}

/* Reads the recipe: -f FILE or the built-in one. *name says which, for messages. Logs. */
static int load_recipe(const struct build_opts *o, char **text, size_t *len, const char **name)
{
	const char *bad;
	int r;

	if (o->file) {
		*name = o->file;
		r = read_file_at(AT_FDCWD, o->file, CF_MAX_FILE + 1, text, len);
		if (r == -EFBIG)
			return log_error_errno(r, "%s: larger than %u bytes", o->file, CF_MAX_FILE);
		if (r < 0)
			return log_error_errno(r, "Failed to read '%s': %m", o->file);
		return 0;
	}
	*name = "(built-in recipe)";
	r = recipe_default(o->install, text, &bad);
	if (r == -EINVAL)
		return log_error_errno(r, "--install '%s': not a Debian package name (a-z 0-9 + - ., "
				       "optionally =VERSION), or more than %u packages", bad ? bad : "", RECIPE_MAX_INSTALL);
	if (r < 0)
		return log_error_errno(r, "Out of memory");
	*len = strlen(*text);
	return 0;
}

static int report(const char *name, int r, const struct cf_error *err)
{
	if (r == -ENOMEM)
		return log_error_errno(r, "Out of memory");
	if (err->line)
		return log_error("%s:%u: %s", name, err->line, err->msg);
	return log_error("%s: %s", name, err->msg);
}

/* The context as the COPY steps see it: the listing and, per COPY step, what it takes. */
struct ctx_state {
	struct build_context ctx;
	bool **copies;
	size_t n_copies;
};

static void ctx_state_done(struct ctx_state *cs)
{
	for (size_t i = 0; i < cs->n_copies; i++)
		free(cs->copies[i]);
	free(cs->copies);
	context_done(&cs->ctx);
	*cs = (struct ctx_state){ 0 };
}

/* Lists the context (only when a COPY needs it), checks every COPY source against it and, with
 * @hash, hashes what the COPY steps take. Logs on failure. */
static int load_context(const struct build_opts *o, const struct cf_recipe *rc, bool hash, struct ctx_state *cs)
{
	_cleanup_close_ int dfd = -1;
	struct ignore ig = { 0 };
	uint64_t budget = CTX_MAX_BYTES;
	size_t n_copy = 0;
	int r;

	*cs = (struct ctx_state){ 0 };
	for (size_t i = 0; i < rc->n_steps; i++)
		n_copy += rc->steps[i].kind == CF_COPY;
	if (n_copy == 0)
		return 0; /* the context is not read at all */
	dfd = open(o->context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return log_error_errno(-errno, "Failed to open the build context '%s': %m", o->context);
	r = context_load_ignore(dfd, &ig);
	if (r >= 0)
		r = context_scan(dfd, &ig, &cs->ctx);
	ignore_done(&ig);
	if (r < 0)
		return r;
	cs->copies = calloc(n_copy, sizeof(bool *));
	if (!cs->copies)
		return log_error_errno(-ENOMEM, "Out of memory");
	for (size_t i = 0; i < rc->n_steps && r >= 0; i++) {
		const char *missing = NULL;
		bool *take;

		if (rc->steps[i].kind != CF_COPY)
			continue;
		take = calloc(cs->ctx.n + 1, sizeof(bool));
		if (!take)
			return log_error_errno(-ENOMEM, "Out of memory");
		cs->copies[cs->n_copies++] = take;
		r = context_select(&cs->ctx, rc->steps[i].sources, take, &missing);
		if (r == -ENOENT)
			return log_error_errno(r, "line %u: COPY source '%s' is not in the build context '%s' (or is "
					       "left out by its ignore file)", rc->steps[i].line, missing, o->context);
		if (r >= 0 && hash)
			r = context_hash_files(dfd, &cs->ctx, take, &budget);
	}
	return r;
}

static void print_argv(FILE *f, char *const *v)
{
	for (size_t i = 0; v && v[i]; i++)
		fprintf(f, "%s'%s'", i ? " " : "", v[i]);
}

static void print_steps(const struct build_opts *o, const struct cf_recipe *rc, size_t n_entries)
{
	printf("builder: %s\n", o->builder == BUILDER_PODMAN ? "podman" : "native");
	printf("recipe: %s\n", o->file ? o->file : "(built-in recipe)");
	printf("from: %s (line %u)\n", rc->from, rc->from_line);
	if (o->tag)
		printf("tag: %s\n", o->tag);
	printf("context: %s (%zu entries)\n", o->context, n_entries);
	for (size_t i = 0; o->build_args && o->build_args[i]; i++)
		printf("build-arg: %.*s\n", (int)strcspn(o->build_args[i], "="), o->build_args[i]); /* names only */
	if (o->builder == BUILDER_PODMAN && !o->allow && !o->allow_files && !o->add_hosts)
		printf("network: podman's, not aisb's gate\n");
	else if (!o->allow && !o->allow_files && !o->add_hosts)
		printf("network: none for RUN (loopback only)%s%s\n", o->file ? "" : "; the built-in recipe needs ",
		       o->file ? "" : RECIPE_ALLOW_HINT);
	else
		printf("network: the gate, for the entries below\n");
	for (size_t i = 0; o->allow && o->allow[i]; i++)
		printf("allow: %s\n", o->allow[i]);
	for (size_t i = 0; o->allow_files && o->allow_files[i]; i++)
		printf("allow-file: %s\n", o->allow_files[i]);
	for (size_t i = 0; o->add_hosts && o->add_hosts[i]; i++)
		printf("add-host: %s\n", o->add_hosts[i]);
	for (size_t i = 0; i < rc->n_steps; i++) {
		const struct cf_step *s = &rc->steps[i];
		printf("step %zu/%zu line %u %s", i + 1, rc->n_steps, s->line, cf_kind_name(s->kind));
		if (s->kind == CF_RUN) {
			printf(" [user %s, cwd %s] ", s->user ? s->user : "root", s->workdir);
			print_argv(stdout, s->argv);
		} else if (s->kind == CF_COPY) {
			putchar(' ');
			print_argv(stdout, s->sources);
			printf(" -> '%s'", s->dest);
			if (s->chmod != (mode_t)-1)
				printf(" mode %04o", (unsigned)s->chmod);
		} else {
			printf(" '%s'", s->workdir);
		}
		putchar('\n');
	}
}

/* "NAME" or "org/NAME" → "localhost/NAME": a built image has no registry, and a docker.io name
 * would be re-resolved upstream when its pin ages (podman does the same). Caller frees. */
static char *local_name(const char *tag)
{
	const char *slash = strchr(tag, '/');
	size_t n = slash ? (size_t)(slash - tag) : 0;
	char *r;

	if (slash && (memchr(tag, '.', n) || memchr(tag, ':', n) || (n == 9 && strncmp(tag, "localhost", 9) == 0)))
		return strdup(tag);
	if (asprintf(&r, "localhost/%s", tag) < 0)
		return NULL;
	return r;
}

/* Records @pin (an imported image) under @refstr as well. Logs on failure. */
static int pin_as(struct store *s, const struct store_ref *pin, const char *refstr, char **canonical)
{
	struct oci_ref ref;
	struct store_ref copy = *pin;
	int r = oci_ref_parse(refstr, &ref);

	if (r < 0)
		return log_error_errno(r, "'%s' is not an image name", refstr);
	copy.name = ref.name;
	copy.resolved_at = (int64_t)time(NULL);
	r = store_ref_write(s, &copy);
	if (r >= 0 && canonical) {
		*canonical = strdup(ref.name);
		if (!*canonical)
			r = log_error_errno(-ENOMEM, "%m");
	}
	oci_ref_done(&ref);
	return r;
}

static bool pin_is_complete(struct store *s, const struct store_ref *pin)
{
	_cleanup_free_ char *p = NULL;
	struct stat st;

	if (!pin->rootfs_id || !pin->digest || !store_has_blob(s, pin->digest))
		return false;
	p = store_rootfs_path(s, pin->rootfs_id);
	return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The build's tag (content hash of @in), its cache pin name localhost/aisb-build:TAG and, for
 * -t @name, localhost/NAME. Return: 0, -ENOMEM. Does not log. */
static int build_names(const struct build_tag_input *in, const char *name, char tag[65], char **cache_ref,
		       char **tag_local)
{
	if (build_tag(in, tag) < 0 || asprintf(cache_ref, BUILD_CACHE_PREFIX "%s", tag) < 0) {
		*cache_ref = NULL;
		return -ENOMEM;
	}
	if (name && !(*tag_local = local_name(name)))
		return -ENOMEM;
	return 0;
}

/* The same inputs were built before when the pin @cache_ref is complete: then nothing runs, -t
 * (@tag_local, or NULL) is pointed at it and the image's name printed. Return: 1 on a hit, 0 on
 * a miss, -errno. Logs on failure. */
static int cache_hit(struct store *s, const char *cache_ref, const char *tag_local)
{
	_cleanup_free_ char *final = NULL;
	struct store_ref pin = { 0 };
	int r = 0;

	if (image_find_pin(s, cache_ref, &pin) == 0 && pin_is_complete(s, &pin)) {
		log_info("cache hit: %s (nothing to build)", cache_ref);
		r = tag_local ? pin_as(s, &pin, tag_local, &final) : 0;
		if (r >= 0) {
			printf("%s\n", final ? final : pin.name);
			r = 1;
		}
	}
	store_ref_done(&pin);
	return r;
}

/* A new private directory STORE/tmp/build-XXXXXX (same filesystem as the store: results
 * appear by rename). Return: its path, or NULL. Logs on failure. */
static char *build_dir_new(struct store *s)
{
	char *dir;

	if (asprintf(&dir, "%s/tmp/build-XXXXXX", s->root) < 0) {
		log_error_errno(-ENOMEM, "Out of memory");
		return NULL;
	}
	if (!mkdtemp(dir)) {
		log_error_errno(-errno, "Failed to create a build directory under '%s': %m", s->root);
		free(dir);
		return NULL;
	}
	return dir;
}

static int open_build_file(const char *tag, const char *suffix, const char *what);

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
	egress_fd = open_build_file(tag, "egress.jsonl", "egress log");
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

/* --builder podman: build, save, import; a cache hit runs nothing. Returns an exit code. */
static int build_with_podman(const struct build_opts *o, const char *text, size_t len,
			     const struct containerfile *cf, const struct cf_recipe *rc, const struct net_plan *np)
{
	struct podman pm = { 0 };
	struct image_opts io = { 0 };
	struct store *s = NULL;
	struct ctx_state cs = { 0 };
	struct oci_ref aref = { 0 };
	struct store_ref pin = { 0 };
	_cleanup_free_ char *base = NULL, *ser = NULL, *cache_ref = NULL, *tmp = NULL, *file = NULL,
			    *archive = NULL, *aname = NULL, *tag_local = NULL, *final = NULL;
	_cleanup_strv_free_ char **labels = NULL;
	char tag[65], recipe_sha[65];
	size_t serlen = 0;
	int r, status = 0, ex = AISB_EXIT_FAILED;

	/* the native builder's times (native_commit()); podman 4.3 has --timestamp but no
	 * SOURCE_DATE_EPOCH, and its default is the build's clock */
	if (o->time_from == TIME_TIMESTAMP) {
		log_error("--timestamp is the native builder's: with --builder podman the image's times are "
			  "podman's (drop --timestamp, or build natively)");
		return AISB_EXIT_POLICY;
	}
	if (o->time_from == TIME_SDE)
		log_warn("SOURCE_DATE_EPOCH is not applied by --builder podman: the image's times are the build's");
	r = podman_init(&pm, hostenv_get("PATH"));
	if (r == -ENOENT) {
		log_error("--builder podman: podman is not installed (apt-get install podman runc)");
		return AISB_EXIT_FAILED;
	}
	if (regflags_any(&o->reg)) {
		/* podman pulls FROM with its own registries.conf and auth; aisb's flags would not reach
		 * it, and silently ignoring --tls-verify or --authfile is worse than refusing */
		log_error("--tls-verify, --cert-dir and --authfile apply to the native builder's FROM pull: with "
			  "--builder podman, pull the base with 'podman pull' first (or use the native builder)");
		podman_done(&pm);
		return AISB_EXIT_POLICY;
	}
	/* without --allow RUN steps are offline, as the native builder's: podman's own network would
	 * be an exit no policy limits */
	pm.no_network = o->podman_no_network || !np;
	log_info("building with podman%s: %s", pm.runtime_runc ? " (--runtime runc: this host has no pure cgroup v2)" : "",
		 np ? "RUN steps reach the network through aisb's gate (--network=ns:, as the native builder's)"
		    : "RUN steps get no network (--network=none); --allow HOST[:PORT] lets them reach a host through aisb's gate");

	if (podman_base_digest(&pm, rc->from, &base) < 0)
		goto out;
	r = load_context(o, rc, true, &cs);
	if (r < 0) {
		ex = r == -ENOENT || r == -EINVAL || r == -EFBIG ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
		goto out;
	}
	ser = cf_serialize(cf, &serlen);
	if (!ser || build_sha256_hex(ser, serlen, recipe_sha) < 0)
		goto oom;
	{
		struct build_tag_input in = { .builder = "podman", .base_digest = base, .recipe = ser,
					      .recipe_len = serlen, .build_args = o->build_args, .ctx = &cs.ctx,
					      .copies = (const bool *const *)cs.copies, .n_copies = cs.n_copies };
		if (build_names(&in, o->tag, tag, &cache_ref, &tag_local) < 0)
			goto oom;
	}

	if (image_opts_init(&io, hostenv_get) < 0) {
		ex = AISB_EXIT_POLICY;
		goto out;
	}
	io.quiet = true;
	if (store_open(io.store_root, &s) < 0)
		goto out;

	/* Cache: the same inputs were built before. Nothing runs. */
	r = cache_hit(s, cache_ref, tag_local);
	if (r != 0) {
		ex = r > 0 ? 0 : AISB_EXIT_FAILED;
		goto out;
	}

	if (!(tmp = build_dir_new(s)))
		goto out;
	file = path_join(tmp, "Containerfile");
	archive = path_join(tmp, "image.oci.tar");
	if (!file || !archive)
		goto oom;
	/* podman reads the very text that was checked and hashed, not the file again */
	r = write_file_at(AT_FDCWD, file, text, len, 0600);
	if (r < 0) {
		log_error_errno(r, "Failed to write '%s': %m", file);
		goto out;
	}
	{
		char *l;
		if (asprintf(&l, "aisb.base-digest=%s", base) < 0 || strv_push_take(&labels, l) < 0 ||
		    asprintf(&l, "aisb.recipe-sha256=%s", recipe_sha) < 0 || strv_push_take(&labels, l) < 0 ||
		    strv_push(&labels, "aisb.builder=podman") < 0 ||
		    asprintf(&l, "aisb.version=%s", PACKAGE_VERSION) < 0 || strv_push_take(&labels, l) < 0)
			goto oom;
	}
	if (np) {
		r = podman_gated_build(&pm, np, tag, file, o->context, cache_ref, o->build_args, labels);
		if (r != 0) {
			ex = r;
			goto out;
		}
	} else if (podman_build(&pm, file, o->context, cache_ref, o->build_args, labels, &status) < 0) {
		goto out;
	}
	if (podman_save(&pm, cache_ref, archive) < 0)
		goto out;
	if (asprintf(&aname, "oci-archive:%s", archive) < 0)
		goto oom;
	if (oci_ref_parse(aname, &aref) < 0) {
		log_error("internal: '%s' is not a reference", aname);
		goto out;
	}
	if (image_pull(s, &aref, &io, true, &pin) < 0)
		goto out;
	/* the archive goes away with the build dir: its pin is replaced by the build's names */
	if (pin_as(s, &pin, cache_ref, NULL) < 0)
		goto out;
	(void)store_ref_remove(s, aref.name);
	if (tag_local && pin_as(s, &pin, tag_local, &final) < 0)
		goto out;
	printf("%s\n", final ? final : cache_ref);
	ex = 0;
	goto out;
oom:
	log_error_errno(-ENOMEM, "Out of memory");
out:
	if (tmp)
		(void)rm_rf(tmp);
	store_ref_done(&pin);
	oci_ref_done(&aref);
	store_free(s);
	image_opts_done(&io);
	ctx_state_done(&cs);
	podman_done(&pm);
	return ex;
}

/* The transcript $XDG_STATE_HOME/aisb/build-<tag>.log (0600), or -1 when it cannot be made (said).
 * Logs on failure. */
/* The build's network plan from --allow, --allow-file and --add-host: NULL (no network) when
 * none is given. Builds take names only: an IP or CIDR entry needs pasta, which builds do not
 * start. Return: 0, or an exit code (78 for a bad entry). Logs on failure. */
static int build_netplan(const struct build_opts *o, struct net_plan **out)
{
	struct aisb_settings s = { .net = NET_ALLOW, .net_source = SRC_FLAG, .allows = o->allow,
				   .allow_files = o->allow_files, .add_hosts = o->add_hosts };
	int r;

	*out = NULL;
	if (!o->allow && !o->allow_files && !o->add_hosts)
		return 0;
	r = netplan_resolve(&s, out);
	if (r != 0)
		return r;
	if ((*out)->pasta) {
		log_error("build: IP and CIDR --allow entries need pasta, which aisb build does not start; allow "
			  "names (with --add-host NAME=IP to pin an address)");
		netplan_free(*out);
		*out = NULL;
		return AISB_EXIT_POLICY;
	}
	return 0;
}

/* $XDG_STATE_HOME/aisb/build-TAG.SUFFIX, created 0600 and truncated; @what names it in
 * messages. Return: the fd, or -1 (warned: the build goes on without it). */
static int open_build_file(const char *tag, const char *suffix, const char *what)
{
	_cleanup_free_ char *dir = homedir_aisb(hostenv_get, HOMEDIR_STATE), *file = NULL;
	int fd;

	if (!dir || mkdir_p(dir, 0700) < 0 || asprintf(&file, "%s/build-%s.%s", dir, tag, suffix) < 0) {
		log_warn("no build %s: cannot create the state directory", what);
		return -1;
	}
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		log_warn_errno(-errno, "no build %s: cannot create '%s': %m", what, file);
	else
		log_info("%s: %s", what, file);
	return fd;
}

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
static int native_resolve(const struct build_opts *o, const struct containerfile *cf,
			  const struct oci_image_config *bcfg, struct cf_recipe *rc)
{
	struct cf_base cb = { .env = bcfg->env, .workdir = bcfg->working_dir, .user = bcfg->user };
	struct cf_error err;
	int r = cf_resolve(cf, o->build_args, &cb, rc, &err);

	if (r < 0) {
		report(o->file ? o->file : "(built-in recipe)", r, &err);
		return r == -ENOMEM ? AISB_EXIT_FAILED : AISB_EXIT_POLICY;
	}
	return 0;
}

/* The context directory (when a COPY needs it), the transcript and, when RUN steps have an
 * allowlist, the egress log: every connection of a RUN is logged, or none is made. Return: 0,
 * or -errno after logging. */
static int native_open_files(const struct build_opts *o, bool need_ctx, const char *tag, bool egress,
			     int *ctx_fd, int *log_fd, int *egress_fd)
{
	if (need_ctx) {
		*ctx_fd = open(o->context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (*ctx_fd < 0)
			return log_error_errno(-errno, "Failed to open the build context '%s': %m", o->context);
	}
	*log_fd = open_build_file(tag, "log", "transcript");
	if (egress) {
		*egress_fd = open_build_file(tag, "egress.jsonl", "egress log");
		if (*egress_fd < 0)
			return *egress_fd; /* said */
	}
	return 0;
}

/* What the native build's layer is committed from. */
struct native_commit_in {
	const struct build_opts *o;
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
static void build_times(const struct build_opts *o, int64_t started, struct layer_times *t, char created[32])
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
	const struct build_opts *o;
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
	if (image_opts_init(&j->io, hostenv_get) < 0 || regflags_apply(&j->io.reg, &j->o->reg) < 0)
		return AISB_EXIT_POLICY;
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
	r = load_context(j->o, &j->rc, true, &j->cs);
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
	r = cache_hit(j->s, j->cache_ref, j->tag_local);
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
	if (plan_root_remap_wanted(hostenv_get) && mount_remap_probe(paths, USERNS_ROOT_RUN_ID, why, sizeof(why)) == 0) {
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

/* The native builder: FROM through the store, the steps on the build's overlay (native.c), one
 * layer, the image committed and pinned; a cache hit runs nothing. Returns an exit code. */
static int build_native(const struct build_opts *o, const struct containerfile *cf, const struct cf_recipe *rc0,
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

/* The native builder cannot run here (@why: no user namespaces, no overlay in one). Podman
 * builds instead only when the builder was not chosen and no allowlist was given, with RUN
 * offline (--network=none) as the native builder's would be; said loudly. Otherwise 77 with
 * the reason. Returns an exit code. */
static int native_unavailable(struct build_opts *o, const char *why, const struct net_plan *np, const char *text,
			      size_t len, const struct containerfile *cf, const struct cf_recipe *rc)
{
	_cleanup_free_ char *podman = NULL;

	if (o->builder_explicit) {
		log_error("the native builder cannot run here: %s (see 'aisb doctor'; --builder podman builds "
			  "outside aisb's sandbox)", why);
		return AISB_EXIT_ENFORCE;
	}
	if (np) {
		log_error("the native builder cannot run here: %s; --allow, --allow-file and --add-host need it "
			  "or a chosen --builder podman (which puts its RUN steps behind the same gate)", why);
		return AISB_EXIT_ENFORCE;
	}
	podman = podman_find_program(hostenv_get("PATH"), "podman");
	if (!podman) {
		log_error("the native builder cannot run here: %s; podman, the fallback builder, is not installed "
			  "(apt-get install podman runc)", why);
		return AISB_EXIT_ENFORCE;
	}
	log_warn("the native builder cannot run here: %s; building with podman instead, RUN steps offline "
		 "(--builder native refuses instead)", why);
	o->builder = BUILDER_PODMAN;
	o->podman_no_network = true;
	return build_with_podman(o, text, len, cf, rc, NULL);
}

int cmd_build(int argc, char **argv)
{
	struct build_opts o = { .context = ".", .comp = LAYER_COMP_GZIP, .comp_level = -1 };
	_cleanup_free_ char *text = NULL;
	struct containerfile cf = { 0 };
	struct cf_recipe rc = { 0 };
	struct cf_error err;
	const char *name = NULL;
	struct net_plan *np = NULL;
	size_t len = 0, n_entries = 0;
	int r;

	r = parse_args(&o, argc, argv);
	if (r < 0) {
		build_opts_done(&o);
		return AISB_EXIT_USAGE;
	}
	if (o.help) {
		print_help();
		build_opts_done(&o);
		return 0;
	}
	r = load_recipe(&o, &text, &len, &name);
	if (r < 0) {
		build_opts_done(&o);
		return r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
	}
	if (o.print_containerfile) {
		/* prints the recipe that would be built, checked first; touches nothing */
		r = cf_parse(text, len, &cf, &err);
		if (r < 0) {
			report(name, r, &err);
			r = r == -ENOMEM ? AISB_EXIT_FAILED : AISB_EXIT_POLICY;
		} else {
			fwrite(text, 1, len, stdout);
			r = fflush(stdout) == 0 ? 0 : AISB_EXIT_FAILED;
		}
		goto out;
	}

	r = cf_parse(text, len, &cf, &err);
	if (r >= 0)
		r = cf_resolve(&cf, o.build_args, NULL, &rc, &err);
	if (r < 0) {
		report(name, r, &err);
		r = r == -ENOMEM ? AISB_EXIT_FAILED : AISB_EXIT_POLICY;
		goto out;
	}
	if ((r = build_netplan(&o, &np)) != 0)
		goto out;
	if (o.builder == BUILDER_PODMAN && !o.dry_run) {
		r = build_with_podman(&o, text, len, &cf, &rc, np);
		goto out;
	}
	{
		struct ctx_state cs;
		r = load_context(&o, &rc, false, &cs);
		n_entries = cs.ctx.n;
		ctx_state_done(&cs);
	}
	if (r < 0) {
		r = r == -ENOENT || r == -EINVAL || r == -EFBIG || r == -ENOTDIR ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
		goto out;
	}
	if (o.dry_run) {
		print_steps(&o, &rc, n_entries);
		r = 0;
		goto out;
	}

	{
		char why[256];
		if (native_probe(why, sizeof(why)) < 0) {
			r = native_unavailable(&o, why, np, text, len, &cf, &rc);
			goto out;
		}
	}
	r = build_native(&o, &cf, &rc, np);
out:
	netplan_free(np);
	cf_recipe_done(&rc);
	cf_done(&cf);
	build_opts_done(&o);
	return r;
}
