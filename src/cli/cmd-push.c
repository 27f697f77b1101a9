// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-push.c — `aisb push REF DEST`, `aisb save REF -o FILE`, `aisb load -i FILE` */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/regflags.h"
#include "rootfs/image.h"
#include "rootfs/layout.h"
#include "rootfs/push.h"
#include "util/log.h"
#include "util/util.h"

/* The options from the environment. Logs on failure. */
static int begin(struct image_opts *o)
{
	if (image_opts_init(o, hostenv_get) < 0) {
		image_opts_done(o);
		return -EINVAL;
	}
	return 0;
}

/* The store and the pin @refstr names (as `aisb images` lists it). Return: 0 or an exit code. */
static int open_pin(struct image_opts *o, const char *refstr, struct store **s, struct store_ref *pin)
{
	int r;

	if (store_open(o->store_root, s) < 0)
		return AISB_EXIT_FAILED;
	r = image_find_pin(*s, refstr, pin);
	if (r == -EINVAL)
		return log_error("'%s' is not an image reference", refstr), AISB_EXIT_POLICY;
	if (r < 0)
		return log_error("no image '%s' in the store (aisb images lists them; aisb pull or aisb build makes "
				 "them)", refstr), AISB_EXIT_FAILED;
	return 0;
}

/* The repository of @pin on @dest's registry, for a cross-repository mount, or NULL. */
static char *mount_source(const struct store_ref *pin, const struct oci_ref *dest)
{
	struct oci_ref src;
	char *repo = NULL;

	if (oci_ref_parse(pin->name, &src) < 0)
		return NULL;
	if (src.transport == OCI_TRANSPORT_REGISTRY && streq(src.registry, dest->registry) &&
	    !streq(src.repository, dest->repository))
		repo = strdup(src.repository);
	oci_ref_done(&src);
	return repo;
}

int cmd_push(int argc, char **argv)
{
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref pin = { 0 };
	struct oci_ref dest = { 0 };
	struct push_stats st;
	_cleanup_free_ char *from = NULL;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val, *w[2] = { NULL, NULL };
	enum cli_arg k;
	size_t nw = 0;
	int r, rf, ex = AISB_EXIT_FAILED;

	if (begin(&o) < 0)
		return AISB_EXIT_POLICY;
	cli_args_init(&args, "push", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD) {
			ex = AISB_EXIT_USAGE;
			goto out;
		}
		if (k == CLI_ARG_WORD) {
			if (nw < ELEMENTSOF(w))
				w[nw] = val;
			nw++;
		} else if ((rf = regflag_by_name(f->name)) >= 0) {
			if (regflag_apply(&o.reg, (enum regflag)rf, val) < 0) {
				ex = AISB_EXIT_USAGE;
				goto out;
			}
		} else if (cli_flag_is(f, "quiet")) {
			o.quiet = true;
			o.reg.progress = false;
		} else if (cli_flag_is(f, "verbose")) {
			log_set_level(LOG_LVL_DEBUG);
		} else if (cli_flag_is(f, "help")) {
			printf("usage: aisb push [--tls-verify=false] [--cert-dir DIR] [--authfile FILE] [-q] REF DEST\n"
			       "  REF: an image in the store (aisb images); DEST: HOST[:PORT]/NAME[:TAG]\n"
			       "  prints the pushed manifest digest (the same as REF's)\n");
			ex = 0;
			goto out;
		} else {
			ex = cli_flag_unhandled("push", f);
			goto out;
		}
	}
	if (nw != 2) {
		log_error("push takes an image and a destination: aisb push REF HOST[:PORT]/NAME[:TAG]");
		ex = AISB_EXIT_USAGE;
		goto out;
	}
	if (oci_ref_parse(w[1], &dest) < 0 || dest.transport != OCI_TRANSPORT_REGISTRY || dest.digest ||
	    streq(dest.registry, IMAGE_LOCAL_REGISTRY)) {
		log_error("'%s' is not a registry destination (HOST[:PORT]/NAME[:TAG], without a digest)",
			  w[1]);
		ex = AISB_EXIT_POLICY;
		goto out;
	}
	if ((ex = open_pin(&o, w[0], &s, &pin)) != 0)
		goto out;
	from = mount_source(&pin, &dest);
	r = push_image(s, &pin, &dest, from, &o.reg, &st);
	if (r < 0) {
		ex = r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
		goto out;
	}
	printf("%s\n", pin.digest);
	if (!o.quiet)
		log_info("%s: pushed %s as %s: %u blob(s) sent (%.1f MB), %u already there, %u mounted from %s",
			 dest.name, pin.name, pin.digest, st.sent, (double)st.bytes / 1e6, st.present, st.mounted,
			 from ? from : "-");
	log_debug("%s: %u registry request(s)", dest.name, st.requests);
	ex = 0;
out:
	store_ref_done(&pin);
	oci_ref_done(&dest);
	store_free(s);
	image_opts_done(&o);
	return ex;
}

/* save and load share their shape: one file flag (-o / -i), REF for save only. */
static int archive_cmd(int argc, char **argv, bool save)
{
	static const char save_usage[] =
		"usage: aisb save REF -o FILE\n"
		"  writes REF from the store as an OCI archive (an oci-layout tar): aisb load -i FILE,\n"
		"  skopeo and podman read it (oci-archive:FILE); prints the manifest digest\n";
	static const char load_usage[] =
		"usage: aisb load -i FILE\n"
		"  imports an OCI archive (aisb save, skopeo, podman) or a docker save archive under\n"
		"  the name it records, else as oci-archive:FILE; prints the manifest digest\n";
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref pin = { 0 };
	struct cli_args args;
	const struct cli_flag *f;
	const char *file = NULL, *ref = NULL, *val;
	enum cli_arg k;
	size_t nw = 0;
	int r, ex = AISB_EXIT_FAILED;

	if (begin(&o) < 0)
		return AISB_EXIT_POLICY;
	cli_args_init(&args, save ? "save" : "load", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD) {
			ex = AISB_EXIT_USAGE;
			goto out;
		}
		if (k == CLI_ARG_WORD) {
			ref = ref ? ref : val;
			nw++;
		} else if (cli_flag_is(f, "output") || cli_flag_is(f, "input")) {
			file = val;
		} else if (cli_flag_is(f, "quiet")) {
			o.quiet = true;
		} else if (cli_flag_is(f, "help")) {
			printf("%s", save ? save_usage : load_usage);
			ex = 0;
			goto out;
		} else {
			ex = cli_flag_unhandled(args.cmd, f);
			goto out;
		}
	}
	if (nw != (save ? 1 : 0) || !file || !*file) {
		log_error("%s", save ? "usage: aisb save REF -o FILE" : "usage: aisb load -i FILE");
		ex = AISB_EXIT_USAGE;
		goto out;
	}
	if (save) {
		if ((ex = open_pin(&o, ref, &s, &pin)) != 0)
			goto out;
		r = layout_save(s, &pin, file);
	} else {
		if (store_open(o.store_root, &s) < 0)
			goto out;
		r = layout_load(s, file, &o, &pin);
		if (r == 0 && !o.quiet)
			log_info("loaded %s: %s", pin.name, pin.digest);
	}
	if (r < 0) {
		ex = r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
		goto out;
	}
	printf("%s\n", pin.digest);
	ex = 0;
out:
	store_ref_done(&pin);
	store_free(s);
	image_opts_done(&o);
	return ex;
}

int cmd_save(int argc, char **argv)
{
	return archive_cmd(argc, argv, true);
}

int cmd_load(int argc, char **argv)
{
	return archive_cmd(argc, argv, false);
}
