// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-pull.c — `aisb pull REF` and `aisb update [--check] [REF...]` */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/regflags.h"
#include "rootfs/image.h"
#include "util/log.h"
#include "util/util.h"

/* Parses the flags pull and update share (their tables in commands.c); the first positional word
 * ends the flags. Return: 0 with *@first the index of the first word (@argc when none), -1 after
 * --help, or an exit code. */
static int parse_flags(int argc, char **argv, const char *cmd, struct image_opts *o, bool *check,
		       const char *usage, int *first)
{
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;
	int rf;

	cli_args_init(&args, cmd, argc, argv);
	args.stop_at_word = true;
	*first = argc;
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD) {
			*first = args.i - 1;
			break;
		}
		if ((rf = regflag_by_name(f->name)) >= 0) {
			if (regflag_apply(&o->reg, (enum regflag)rf, val) < 0)
				return AISB_EXIT_USAGE;
		} else if (cli_flag_is(f, "quiet")) {
			o->quiet = true;
			o->reg.progress = false;
		} else if (cli_flag_is(f, "check") && check) {
			*check = true;
		} else if (cli_flag_is(f, "verbose")) {
			log_set_level(LOG_LVL_DEBUG);
		} else if (cli_flag_is(f, "help")) {
			printf("%s", usage);
			return -1;
		} else
			return cli_flag_unhandled(cmd, f);
	}
	return 0;
}

static int exit_code(int r)
{
	return r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
}

int cmd_pull(int argc, char **argv)
{
	static const char usage[] =
		"usage: aisb pull [--tls-verify=false] [--cert-dir DIR] [--authfile FILE] [-q] REF\n"
		"  REF: NAME[:TAG], HOST[:PORT]/NAME[:TAG], NAME@sha256:..., oci:DIR[:TAG], oci-archive:FILE[:TAG],\n"
		"       docker-archive:FILE\n";
	struct image_opts o;
	struct oci_ref ref;
	struct store *s = NULL;
	struct store_ref pin = { 0 };
	int first, r;

	if (image_opts_init(&o, hostenv_get) < 0) {
		image_opts_done(&o);
		return AISB_EXIT_POLICY;
	}
	r = parse_flags(argc, argv, "pull", &o, NULL, usage, &first);
	if (r) {
		image_opts_done(&o);
		return r < 0 ? 0 : r;
	}
	if (first != argc - 1) {
		image_opts_done(&o);
		return log_error("pull takes exactly one image reference (see --help)"), AISB_EXIT_USAGE;
	}
	if (oci_ref_parse(argv[first], &ref) < 0) {
		image_opts_done(&o);
		return log_error("'%s' is not an image reference (e.g. debian:12, HOST:PORT/NAME:TAG, NAME@sha256:..., "
				 "oci:DIR[:TAG])", argv[first]), AISB_EXIT_POLICY;
	}
	r = store_open(o.store_root, &s);
	/* forced: a pull asks the registry what the tag names now, as podman's does, whatever the
	 * pin's age (AISB_BASE_TTL_DAYS spares runs and builds that request, not an explicit pull);
	 * a moved tag moves the pin and says so; a NAME@DIGEST pull never asks */
	if (r == 0)
		r = image_pull(s, &ref, &o, true, &pin);
	if (r == 0) {
		printf("%s\n", pin.digest);
		if (!o.quiet)
			log_info("%s: %s, rootfs %s/rootfs/%s", ref.name, pin.digest, s->root, pin.rootfs_id);
	}
	store_ref_done(&pin);
	store_free(s);
	oci_ref_done(&ref);
	image_opts_done(&o);
	return r == 0 ? 0 : exit_code(r);
}

/* The names to update: those given, or every pin of a registry tag. */
static int update_one(struct store *s, const char *name, const struct image_opts *o, bool check, bool named)
{
	struct oci_ref ref;
	struct store_ref pin = { 0 }, npin = { 0 };
	_cleanup_free_ char *up = NULL;
	int r;

	if (oci_ref_parse(name, &ref) < 0)
		return log_error("'%s' is not an image reference", name), -EINVAL;
	if (ref.transport != OCI_TRANSPORT_REGISTRY || ref.digest) {
		if (named)
			log_info("%s: pinned by digest or local: nothing to update", ref.name);
		oci_ref_done(&ref);
		return 0;
	}
	r = store_ref_read(s, ref.name, &pin);
	if (r < 0) {
		log_error("%s has not been pulled (aisb pull %s)", ref.name, name);
		oci_ref_done(&ref);
		return -ENOENT;
	}
	if (check) {
		r = image_resolve_upstream(&ref, o, &up);
		if (r == 0)
			printf("%s\tpinned %s\tupstream %s\t%s\n", ref.name, pin.digest, up,
			       streq(pin.digest, up) ? "up-to-date" : "update-available");
	} else {
		r = image_pull(s, &ref, o, true, &npin);
		if (r == 0)
			printf("%s\t%s\t%s\n", ref.name, npin.digest, streq(pin.digest, npin.digest) ? "unchanged" : "updated");
		store_ref_done(&npin);
	}
	store_ref_done(&pin);
	oci_ref_done(&ref);
	return r;
}

int cmd_update(int argc, char **argv)
{
	static const char usage[] = "usage: aisb update [--check] [--tls-verify=false] [--cert-dir DIR] [REF...]\n"
				    "  re-resolves pinned tags now; --check prints pinned vs upstream and changes nothing\n";
	struct image_opts o;
	struct store *s = NULL;
	bool check = false;
	int first, r, ret = 0;

	if (image_opts_init(&o, hostenv_get) < 0) {
		image_opts_done(&o);
		return AISB_EXIT_POLICY;
	}
	r = parse_flags(argc, argv, "update", &o, &check, usage, &first);
	if (r) {
		image_opts_done(&o);
		return r < 0 ? 0 : r;
	}
	if (store_open(o.store_root, &s) < 0) {
		image_opts_done(&o);
		return AISB_EXIT_FAILED;
	}
	if (first < argc) {
		for (int i = first; i < argc; i++)
			if ((r = update_one(s, argv[i], &o, check, true)) < 0 && !ret)
				ret = exit_code(r);
	} else {
		struct store_ref *refs;
		size_t n;
		if (store_ref_list(s, &refs, &n) < 0) {
			ret = AISB_EXIT_FAILED;
		} else {
			for (size_t i = 0; i < n; i++) {
				if ((r = update_one(s, refs[i].name, &o, check, false)) < 0 && !ret)
					ret = exit_code(r);
				store_ref_done(&refs[i]);
			}
			free(refs);
		}
	}
	store_free(s);
	image_opts_done(&o);
	return ret;
}
