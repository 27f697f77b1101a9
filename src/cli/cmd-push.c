// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-push.c — `aisb push REF DEST`, `aisb save REF -o FILE`, `aisb load -i FILE` */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/hostenv.h"
#include "cli/regflags.h"
#include "rootfs/image.h"
#include "rootfs/layout.h"
#include "rootfs/push.h"
#include "util/log.h"
#include "util/util.h"

/* The options from the environment, and getopt reset for this subcommand's argv. Logs on
 * failure. */
static int begin(struct image_opts *o)
{
	if (image_opts_init(o, hostenv_get) < 0) {
		image_opts_done(o);
		return -EINVAL;
	}
	optind = 0; /* full re-initialisation (glibc) */
	opterr = 0;
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
	static const struct option longopts[] = {
		REGFLAG_LONGOPTS,
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref pin = { 0 };
	struct oci_ref dest = { 0 };
	struct push_stats st;
	_cleanup_free_ char *from = NULL;
	int c, r, ex = AISB_EXIT_FAILED;

	if (begin(&o) < 0)
		return AISB_EXIT_POLICY;
	while ((c = getopt_long(argc, argv, "qvh", longopts, NULL)) != -1) {
		switch (c) {
		case REGFLAG_TLS_VERIFY:
		case REGFLAG_CERT_DIR:
		case REGFLAG_AUTHFILE:
			if (regflag_apply(&o.reg, (enum regflag)c, optarg) < 0) {
				ex = AISB_EXIT_USAGE;
				goto out;
			}
			break;
		case 'q':
			o.quiet = true;
			o.reg.progress = false;
			break;
		case 'v':
			log_set_level(LOG_LVL_DEBUG);
			break;
		case 'h':
			printf("usage: aisb push [--tls-verify=false] [--cert-dir DIR] [--authfile FILE] [-q] REF DEST\n"
			       "  REF: an image in the store (aisb images); DEST: HOST[:PORT]/NAME[:TAG]\n"
			       "  prints the pushed manifest digest (the same as REF's)\n");
			ex = 0;
			goto out;
		default:
			log_error("unknown option '%s' (see --help)", argv[optind - 1]);
			ex = AISB_EXIT_USAGE;
			goto out;
		}
	}
	if (optind != argc - 2) {
		log_error("push takes an image and a destination: aisb push REF HOST[:PORT]/NAME[:TAG]");
		ex = AISB_EXIT_USAGE;
		goto out;
	}
	if (oci_ref_parse(argv[optind + 1], &dest) < 0 || dest.transport != OCI_TRANSPORT_REGISTRY || dest.digest ||
	    streq(dest.registry, IMAGE_LOCAL_REGISTRY)) {
		log_error("'%s' is not a registry destination (HOST[:PORT]/NAME[:TAG], without a digest)",
			  argv[optind + 1]);
		ex = AISB_EXIT_POLICY;
		goto out;
	}
	if ((ex = open_pin(&o, argv[optind], &s, &pin)) != 0)
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
	static const struct option save_opts[] = {
		{ "output", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct option load_opts[] = {
		{ "input", required_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char save_usage[] =
		"usage: aisb save REF -o FILE\n"
		"  writes REF from the store as an OCI archive (an oci-layout tar): aisb load -i FILE,\n"
		"  skopeo and podman read it (oci-archive:FILE); prints the manifest digest\n";
	static const char load_usage[] =
		"usage: aisb load -i FILE\n"
		"  imports an OCI archive (aisb save, skopeo, podman) or a docker save archive (several\n"
		"  images with podman save -m) under every name it records, else as oci-archive:FILE;\n"
		"  prints each image's manifest digest\n";
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref pin = { 0 }, *pins = NULL;
	size_t n_pins = 0;
	const char *file = NULL;
	int c, r, ex = AISB_EXIT_FAILED;

	if (begin(&o) < 0)
		return AISB_EXIT_POLICY;
	while ((c = getopt_long(argc, argv, save ? "o:h" : "i:qh", save ? save_opts : load_opts, NULL)) != -1) {
		if (c == 'o' || c == 'i' || c == 'f') {
			file = optarg;
		} else if (c == 'q') {
			o.quiet = true;
		} else if (c == 'h') {
			printf("%s", save ? save_usage : load_usage);
			ex = 0;
			goto out;
		} else {
			log_error("%s (see --help)", c == ':' ? "the file flag needs a value" : "unknown option");
			ex = AISB_EXIT_USAGE;
			goto out;
		}
	}
	if (optind != argc - (save ? 1 : 0) || !file || !*file) {
		log_error("%s", save ? "usage: aisb save REF -o FILE" : "usage: aisb load -i FILE");
		ex = AISB_EXIT_USAGE;
		goto out;
	}
	if (save) {
		if ((ex = open_pin(&o, argv[optind], &s, &pin)) != 0)
			goto out;
		r = layout_save(s, &pin, file);
	} else {
		if (store_open(o.store_root, &s) < 0)
			goto out;
		r = image_load_archive(s, file, &o, &pins, &n_pins);
		/* stdout: each image's digest once; stderr: each name it was pinned under */
		for (size_t i = 0; r == 0 && i < n_pins; i++) {
			bool seen = false;
			for (size_t j = 0; j < i; j++)
				seen |= streq(pins[j].digest, pins[i].digest);
			if (!seen)
				printf("%s\n", pins[i].digest);
			if (!o.quiet)
				log_info("loaded %s: %s", pins[i].name, pins[i].digest);
		}
	}
	if (r < 0) {
		ex = r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
		goto out;
	}
	if (save)
		printf("%s\n", pin.digest);
	ex = 0;
out:
	for (size_t i = 0; i < n_pins; i++)
		store_ref_done(&pins[i]);
	free(pins);
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
