/* SPDX-License-Identifier: GPL-2.0-or-later */
/* containerfile.h — the Containerfile subset that `aisb build` accepts (docs/design.md §9).
 *
 * Two pure stages. cf_parse() reads the text: parser directives, comments, line continuations,
 * instruction keywords, exec (JSON) versus shell form and leading --flags. Everything outside
 * the subset (ADD, HEALTHCHECK, ONBUILD, SHELL, VOLUME, EXPOSE, STOPSIGNAL, multi-stage FROM ... AS,
 * COPY --from, RUN --mount, heredocs, ...) is an error that names the line and the instruction,
 * never a silent skip. cf_resolve() then evaluates the instructions in order with the build args
 * and the base image's config: ARG scoping (ARG before FROM reaches only FROM), ENV/ARG variable
 * expansion ($VAR, ${VAR}, ${VAR:-word}, ${VAR:+word}, ${VAR-word}, ${VAR+word}) in the
 * instructions where Docker expands them (FROM ARG ENV LABEL WORKDIR USER COPY; never RUN, CMD,
 * ENTRYPOINT, which the shell sees as written), relative WORKDIR, and yields the list of steps
 * the builder executes plus the resulting image config. Neither stage touches the filesystem or
 * logs: errors come back in a struct cf_error for the caller to print.
 */
#ifndef AISB_BUILD_CONTAINERFILE_H
#define AISB_BUILD_CONTAINERFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Bounds on what a recipe may make us hold in memory. */
#define CF_MAX_FILE (1u << 20)        /* bytes of the whole file */
#define CF_MAX_LINE 16384u            /* bytes of one physical line */
#define CF_MAX_LOGICAL 65536u         /* bytes of one instruction after joining continuations */
#define CF_MAX_INSTRUCTIONS 512u
#define CF_MAX_WORDS 4096u            /* words in one instruction */
#define CF_MAX_EXPANSION 65536u       /* bytes of one word after variable expansion */
#define CF_MAX_BUILD_ARGS 128u

enum cf_kind {
	CF_FROM,
	CF_ARG,
	CF_ENV,
	CF_LABEL,
	CF_RUN,
	CF_WORKDIR,
	CF_COPY,
	CF_USER,
	CF_ENTRYPOINT,
	CF_CMD,
	CF_KIND_MAX
};

struct cf_error {
	unsigned line;   /* 1-based; 0 when not tied to a line (e.g. a --build-arg) */
	char msg[256];
};

/* One instruction as written (syntax stage). */
struct cf_instr {
	enum cf_kind kind;
	unsigned line;   /* line of the keyword */
	char *args;      /* argument text after the flags: continuations joined, comment lines gone */
	bool json;       /* exec (JSON array) form: words holds the strings */
	char **words;    /* JSON form only, else NULL */
	mode_t chmod;    /* COPY --chmod=OCTAL, or (mode_t)-1 */
};

struct containerfile {
	struct cf_instr *ins;
	size_t n;
};

/* Parses @len bytes of @text. Return: 0; -EINVAL with @err filled for a recipe outside the
 * subset or a syntax error; -EFBIG for a file, line or count over the bounds (also in @err);
 * -ENOMEM. Does not log. */
int cf_parse(const char *text, size_t len, struct containerfile *cf, struct cf_error *err);

/* Frees the members of @cf (accepts a zeroed one). */
void cf_done(struct containerfile *cf);

/* Returns the upper-case keyword of @k ("RUN"). */
const char *cf_kind_name(enum cf_kind k);

/* The normalised recipe: one record per instruction (kind, form, chmod and arguments, each
 * length-prefixed), independent of comments, blank lines, continuation layout and keyword case,
 * so that it is a stable input of the content-hash tag. Caller frees. NULL on ENOMEM. */
char *cf_serialize(const struct containerfile *cf, size_t *len);

/* The config of the base image the recipe starts from (fields may be NULL). */
struct cf_base {
	char *const *env;   /* "K=V" */
	const char *workdir;
	const char *user;
};

struct cf_kv {
	char *key;
	char *value;
};

/* A step the builder executes, in recipe order. */
struct cf_step {
	enum cf_kind kind;  /* CF_RUN, CF_COPY or CF_WORKDIR (which creates the directory) */
	unsigned line;
	char **argv;        /* RUN: exec-form argv, or { "/bin/sh", "-c", TEXT } */
	char **env;         /* RUN: "K=V": base env, then ENV, then ARG values (ENV wins) */
	char *user;         /* RUN: USER in force, or NULL (root, the build's default) */
	char *workdir;      /* RUN/COPY: absolute working directory; WORKDIR: the directory */
	char **sources;     /* COPY: cleaned paths relative to the context root ("." = all of it) */
	char *dest;         /* COPY: absolute destination; a trailing '/' is kept */
	mode_t chmod;       /* COPY: --chmod, or (mode_t)-1 */
};

/* The recipe evaluated against build args and the base config. */
struct cf_recipe {
	char *from;             /* the base reference, global ARGs expanded */
	unsigned from_line;
	struct cf_step *steps;
	size_t n_steps;
	/* The resulting image config. env starts as the base env; entrypoint/cmd are NULL when
	 * this recipe did not set them (the base's apply, except that an ENTRYPOINT set here
	 * without a CMD here clears the base's CMD, as Docker does). */
	char **env;
	char *workdir;
	char *user;
	char **entrypoint;
	bool entrypoint_set;
	char **cmd;
	bool cmd_set;
	struct cf_kv *labels;
	size_t n_labels;
	char **args_used;       /* names of the ARGs this recipe declared (sorted, unique) */
};

/* Evaluates @cf with @build_args ("K=V", from --build-arg; each must be declared by an ARG, or
 * it is an error naming it) and @base (may be NULL: only FROM is needed, e.g. to know which base
 * to pull). Return: 0, -EINVAL with @err filled, -E2BIG when an expansion grows past
 * CF_MAX_EXPANSION, -ENOMEM. Does not log. */
int cf_resolve(const struct containerfile *cf, char *const *build_args, const struct cf_base *base,
	       struct cf_recipe *out, struct cf_error *err);

/* Frees the members of @r (accepts a zeroed one). */
void cf_recipe_done(struct cf_recipe *r);

/* Shell-like word processing as Docker's: splits @s on unquoted blanks when @split (else one
 * word, blanks kept), removes quotes and escapes, and expands variables from @vars ("K=V", the
 * last one of a name wins; NULL: no expansion). Return: 0, -EINVAL with *why set (unterminated
 * quote, bad ${...}), -E2BIG, -ENOMEM. Does not log. */
int cf_words(const char *s, char *const *vars, bool split, char ***words, const char **why);

/* Lexically cleans @p (collapses "//", removes "." and resolves ".." components, drops a
 * trailing '/'); an absolute path stays absolute. *escapes (optional) is set when a ".." would
 * climb above the start of a relative path or above "/". Caller frees; NULL on ENOMEM. */
char *cf_path_clean(const char *p, bool *escapes);

#endif
