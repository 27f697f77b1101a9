// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-build.c — `aisb build`: the flags, the environment and the context's recipe file into a
 * build request; build_run() (src/build/pipeline.c) checks, previews or builds it.
 *
 * aisb build [-f FILE] [-t NAME] [--build-arg K=V]... [--install PKG]... [--builder native|podman]
 *            [--allow ENTRY]... [--allow-file FILE]... [--add-host NAME=IP]...
 *            [--print-containerfile] [--dry-run] [CONTEXT]
 *
 * Everything that can be checked before the store is touched is checked first (here: the flags'
 * values, the context, the recipe file; in the pipeline: the recipe subset, build args, the
 * ignore file, every COPY source against the context, the allowlist), so a bad recipe or entry
 * fails with 78 at once and nothing is written. See docs/build.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build/compress.h"
#include "build/pipeline.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/regflags.h"
#include "cli/resolve.h"
#include "util/log.h"
#include "util/util.h"

/* The request and what its pointers point to: the lists are owned here, the strings are argv's. */
struct build_opts {
	struct build_request req;
	char *found_file;                  /* CONTEXT/Containerfile or Dockerfile, when -f was not given */
	bool builtin;                      /* --default: the built-in recipe, even with a Containerfile */
	bool context_given;                /* CONTEXT was a word of the command line */
	bool help;
	char **build_args, **install, **allow, **allow_files, **add_hosts;
};

static void build_opts_done(struct build_opts *o)
{
	free(o->found_file);
	strv_free(o->build_args);
	strv_free(o->install);
	strv_free(o->allow);
	strv_free(o->allow_files);
	strv_free(o->add_hosts);
	strv_free(o->req.reg.auth_files);
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

/* One flag of the table (cli/commands.c) into @o. Return: 0, or -EINVAL after logging. */
static int parse_flag(struct build_opts *o, const struct cli_flag *f, const char *val)
{
	struct build_request *q = &o->req;
	int r = 0, rf;

	if (cli_flag_is(f, "file")) {
		q->file = val;
	} else if (cli_flag_is(f, "tag")) {
		q->tag = val;
	} else if (cli_flag_is(f, "build-arg")) {
		if (!strchr(val, '='))
			return log_error("--build-arg '%s' needs a value: --build-arg NAME=VALUE "
					 "(values are never taken from the environment)", val), -EINVAL;
		r = strv_push(&o->build_args, val);
	} else if (cli_flag_is(f, "install")) {
		r = strv_push(&o->install, val);
	} else if (cli_flag_is(f, "builder")) {
		q->builder_explicit = true;
		if (streq(val, "native"))
			q->builder = BUILDER_NATIVE;
		else if (streq(val, "podman"))
			q->builder = BUILDER_PODMAN;
		else
			return log_error("--builder '%s': use native or podman", val), -EINVAL;
	} else if (cli_flag_is(f, "allow")) {
		r = strv_push(&o->allow, val);
	} else if (cli_flag_is(f, "allow-file")) {
		r = strv_push(&o->allow_files, val);
	} else if (cli_flag_is(f, "add-host")) {
		r = strv_push(&o->add_hosts, val);
	} else if (cli_flag_is(f, "print-containerfile")) {
		q->print_containerfile = true;
	} else if (cli_flag_is(f, "dry-run")) {
		q->dry_run = true;
	} else if (cli_flag_is(f, "default")) {
		o->builtin = true;
	} else if (cli_flag_is(f, "compression-format")) {
		if (layer_compression_parse(val, &q->comp) < 0)
			return log_error("--compression-format '%s': use gzip, zstd or none", val), -EINVAL;
	} else if (cli_flag_is(f, "compression-level")) {
		if ((q->comp_level = layer_compression_level_parse(val)) < 0)
			return log_error("--compression-level '%s': a number, 1-9 for gzip, 1-19 for zstd", val), -EINVAL;
	} else if (cli_flag_is(f, "timestamp")) {
		if (parse_epoch(val, &q->timestamp) < 0)
			return log_error("--timestamp '%s': seconds since 1970-01-01 UTC, 0-%lld", val, BUILD_TIME_MAX),
			       -EINVAL;
		q->time_from = TIME_TIMESTAMP;
	} else if ((rf = regflag_by_name(f->name)) >= 0) {
		/* checked and laid out now as pull's are; build_run() lays them over the environment's */
		q->reg_given = true;
		if (regflag_apply(&q->reg, (enum regflag)rf, val) < 0)
			return -EINVAL;
	} else if (cli_flag_is(f, "help")) {
		o->help = true;
	} else {
		(void)cli_flag_unhandled("build", f);
		return -EINVAL;
	}
	return r < 0 ? log_error_errno(r, "Out of memory"), -EINVAL : 0;
}

/* The image's times and the layer's compression level, once the flags are read:
 * SOURCE_DATE_EPOCH when --timestamp was not given. Return: 0, or -EINVAL after logging. */
static int resolve_times_and_level(struct build_request *q)
{
	int lv;

	if (q->time_from == TIME_DEFAULT) {
		/* reproducible-builds.org: set and not a plain number is an error, never ignored */
		const char *sde = hostenv_get("SOURCE_DATE_EPOCH");
		if (sde && *sde) {
			if (parse_epoch(sde, &q->timestamp) < 0)
				return log_error("SOURCE_DATE_EPOCH='%.32s' is not seconds since 1970-01-01 UTC "
						 "(0-%lld): fix or unset it", sde, BUILD_TIME_MAX), -EINVAL;
			q->time_from = TIME_SDE;
		}
	}
	lv = layer_compression_level(q->comp, q->comp_level);
	if (lv < 0)
		return log_error("--compression-level %d does not fit --compression-format %s (gzip 1-9, zstd "
				 "1-19, none takes no level)", q->comp_level, layer_compression_name(q->comp)), -EINVAL;
	q->comp_level = lv;
	return 0;
}

/* The context (a directory) and the recipe: -f, --default, else CONTEXT/Containerfile or
 * CONTEXT/Dockerfile as podman finds them; the -t name. Return: 0, or -errno after logging. */
static int resolve_context_and_recipe(struct build_opts *o)
{
	struct build_request *q = &o->req;

	/* a CONTEXT that is not a directory is a typo, never a reason to build the built-in recipe */
	if (!o->help) {
		struct stat st;
		if (stat(q->context, &st) < 0)
			return log_error_errno(-errno, "build: the context directory '%s': %m", q->context);
		if (!S_ISDIR(st.st_mode))
			return log_error("build: the context '%s' is not a directory", q->context);
	}
	if (q->file && o->builtin)
		return log_error("-f %s and --default name two recipes: pick one", q->file);
	if (q->file && o->install)
		return log_error("--install adds packages to the built-in recipe; with -f, write them in the file");
	/* As podman does: without -f, CONTEXT/Containerfile, else CONTEXT/Dockerfile. The built-in
	 * recipe is reached by --default, or when the context has neither. */
	if (!q->file && !o->builtin) {
		static const char *const files[] = { "Containerfile", "Dockerfile" };
		for (size_t i = 0; i < ELEMENTSOF(files) && !o->found_file; i++) {
			_cleanup_free_ char *p = path_join(q->context, files[i]);
			if (!p)
				return log_error_errno(-ENOMEM, "Out of memory");
			if (access(p, F_OK) == 0)
				o->found_file = TAKE_PTR(p);
		}
		if (o->found_file && o->install)
			return log_error("--install adds packages to the built-in recipe, but '%s' is what this "
					 "builds; pass --default to build the built-in recipe", o->found_file);
		q->file = o->found_file;
	}
	if (q->tag && !tag_is_plausible(q->tag))
		return log_error("-t '%s' is not an image name", q->tag);
	return 0;
}

/* argv into @o; the request's lists point at @o's. Return: 0, or -errno after logging. */
static int parse_args(struct build_opts *o, int argc, char **argv)
{
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;
	int r;

	cli_args_init(&args, "build", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return -EINVAL;
		if (k == CLI_ARG_WORD && o->context_given)
			return log_error("build: one CONTEXT only, got also '%s'", val);
		if (k == CLI_ARG_WORD) {
			o->req.context = val;
			o->context_given = true;
		} else if (parse_flag(o, f, val) < 0) {
			return -EINVAL;
		}
	}
	r = resolve_times_and_level(&o->req);
	if (r >= 0)
		r = resolve_context_and_recipe(o);
	o->req.build_args = o->build_args;
	o->req.install = o->install;
	o->req.allow = o->allow;
	o->req.allow_files = o->allow_files;
	o->req.add_hosts = o->add_hosts;
	o->req.root_remap = plan_root_remap_wanted(hostenv_get);
	return r;
}

int cmd_build(int argc, char **argv)
{
	struct build_opts o = { .req = { .context = ".", .comp = LAYER_COMP_GZIP, .comp_level = -1,
					 .reg = { .tls_verify = true } } };
	int r;

	r = parse_args(&o, argc, argv);
	if (r < 0)
		r = AISB_EXIT_USAGE;
	else if (o.help)
		print_help(), r = 0;
	else
		r = build_run(&o.req);
	build_opts_done(&o);
	return r;
}
