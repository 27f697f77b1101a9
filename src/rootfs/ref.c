// SPDX-License-Identifier: GPL-2.0-or-later
/* ref.c — image reference parsing with podman's normalisation */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rootfs/ref.h"
#include "util/util.h"

#define REF_NAME_MAX 255 /* distribution spec: registry + repository */
#define REF_TAG_MAX 128

bool oci_digest_is_valid(const char *d)
{
	if (!d || strncmp(d, "sha256:", 7) != 0)
		return false;
	d += 7;
	for (int i = 0; i < 64; i++)
		if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f')))
			return false;
	return d[64] == 0;
}

static bool tag_is_valid(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > REF_TAG_MAX)
		return false;
	if (!(isalnum((unsigned char)t[0]) || t[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)t[i]) || t[i] == '_' || t[i] == '.' || t[i] == '-'))
			return false;
	return true;
}

/* A registry host: letters, digits, '.', '-' (IPv6 literals in brackets too), optional :port. */
static bool domain_is_valid(const char *d)
{
	const char *colon = NULL;
	size_t n = strlen(d);

	if (n == 0 || n > 253)
		return false;
	if (d[0] == '[') {
		const char *end = strchr(d, ']');
		if (!end || end == d + 1)
			return false;
		for (const char *p = d + 1; p < end; p++)
			if (!(isxdigit((unsigned char)*p) || *p == ':'))
				return false;
		colon = end[1] == ':' ? end + 1 : NULL;
		if (!colon && end[1])
			return false;
	} else {
		if (!isalnum((unsigned char)d[0]))
			return false;
		for (const char *p = d; *p; p++) {
			if (*p == ':') {
				colon = p;
				break;
			}
			if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '-'))
				return false;
		}
		if (colon && !isalnum((unsigned char)colon[-1]))
			return false;
	}
	if (colon) {
		size_t k = strlen(colon + 1);
		if (k == 0 || k > 5)
			return false;
		for (const char *p = colon + 1; *p; p++)
			if (!isdigit((unsigned char)*p))
				return false;
	}
	return true;
}

/* One path component of a repository: [a-z0-9]+ joined by '.', '_', '__' or runs of '-'. */
static bool repo_component_is_valid(const char *c, size_t n)
{
	if (n == 0)
		return false;
	if (!(islower((unsigned char)c[0]) || isdigit((unsigned char)c[0])) ||
	    !(islower((unsigned char)c[n - 1]) || isdigit((unsigned char)c[n - 1])))
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = c[i];
		if (islower((unsigned char)ch) || isdigit((unsigned char)ch))
			continue;
		if (ch == '.' || ch == '_') {
			/* '.' alone; '_' alone or doubled */
			size_t run = 1;
			while (i + run < n && c[i + run] == ch)
				run++;
			if ((ch == '.' && run > 1) || run > 2)
				return false;
			if (i + run < n && !(islower((unsigned char)c[i + run]) || isdigit((unsigned char)c[i + run])))
				return false;
			i += run - 1;
			continue;
		}
		if (ch == '-') {
			size_t run = 1;
			while (i + run < n && c[i + run] == '-')
				run++;
			if (i + run < n && !(islower((unsigned char)c[i + run]) || isdigit((unsigned char)c[i + run])))
				return false;
			i += run - 1;
			continue;
		}
		return false;
	}
	return true;
}

static bool repository_is_valid(const char *r)
{
	const char *p = r;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (!repo_component_is_valid(p, n))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

void oci_ref_done(struct oci_ref *ref)
{
	if (!ref)
		return;
	free(ref->registry);
	free(ref->repository);
	free(ref->tag);
	free(ref->digest);
	free(ref->path);
	free(ref->name);
	memset(ref, 0, sizeof(*ref));
}

static char *absolute_path(const char *p)
{
	_cleanup_free_ char *cwd = NULL;
	if (path_is_absolute(p))
		return strdup(p);
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return NULL;
	return path_join(cwd, p);
}

/* oci:DIR[:TAG] and oci-archive:FILE[:TAG]: a trailing ":TAG" counts only if it holds no '/'. */
static int parse_offline(const char *rest, const char *prefix, enum oci_transport t, bool tags,
			 struct oci_ref *ref)
{
	_cleanup_free_ char *s = strdup(rest);
	char *colon;
	int r;

	if (!s)
		return -ENOMEM;
	if (!*s || strlen(s) > 4096)
		return -EINVAL;
	colon = tags ? strrchr(s, ':') : NULL;
	if (colon && !strchr(colon, '/')) {
		*colon = 0;
		if (!tag_is_valid(colon + 1) || !*s)
			return -EINVAL;
		ref->tag = strdup(colon + 1);
		if (!ref->tag)
			return -ENOMEM;
	}
	ref->transport = t;
	ref->path = absolute_path(s);
	if (!ref->path)
		return -ENOMEM;
	if (ref->tag)
		r = asprintf(&ref->name, "%s%s:%s", prefix, ref->path, ref->tag);
	else
		r = asprintf(&ref->name, "%s%s", prefix, ref->path);
	if (r < 0) {
		ref->name = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int parse_registry(const char *s, struct oci_ref *ref)
{
	_cleanup_free_ char *buf = strdup(s);
	char *at, *colon, *slash, *name;
	int r;

	if (!buf)
		return -ENOMEM;
	if (!*buf || strlen(buf) > REF_NAME_MAX + REF_TAG_MAX + 80)
		return -EINVAL;

	at = strchr(buf, '@');
	if (at) {
		*at = 0;
		if (!oci_digest_is_valid(at + 1))
			return -EINVAL;
		ref->digest = strdup(at + 1);
		if (!ref->digest)
			return -ENOMEM;
	}
	slash = strrchr(buf, '/');
	colon = strrchr(buf, ':');
	if (colon && (!slash || colon > slash)) {
		*colon = 0;
		if (!tag_is_valid(colon + 1))
			return -EINVAL;
		ref->tag = strdup(colon + 1);
		if (!ref->tag)
			return -ENOMEM;
	}
	if (!ref->tag && !ref->digest) {
		ref->tag = strdup("latest");
		if (!ref->tag)
			return -ENOMEM;
	}

	name = buf;
	slash = strchr(name, '/');
	if (slash && (memchr(name, '.', (size_t)(slash - name)) || memchr(name, ':', (size_t)(slash - name)) ||
		      (slash - name == 9 && strncmp(name, "localhost", 9) == 0) || name[0] == '[')) {
		*slash = 0;
		if (!domain_is_valid(name))
			return -EINVAL;
		ref->registry = strdup(name);
		name = slash + 1;
	} else {
		ref->registry = strdup("docker.io");
		ref->short_name = true;
	}
	if (!ref->registry)
		return -ENOMEM;
	/* podman (containers/image) treats these as docker.io too. */
	if (streq(ref->registry, "index.docker.io") || streq(ref->registry, "registry-1.docker.io")) {
		free(ref->registry);
		ref->registry = strdup("docker.io");
		if (!ref->registry)
			return -ENOMEM;
	}
	if (streq(ref->registry, "docker.io") && !strchr(name, '/'))
		r = asprintf(&ref->repository, "library/%s", name);
	else
		r = asprintf(&ref->repository, "%s", name);
	if (r < 0) {
		ref->repository = NULL;
		return -ENOMEM;
	}
	if (!repository_is_valid(ref->repository))
		return -EINVAL;
	if (strlen(ref->registry) + 1 + strlen(ref->repository) > REF_NAME_MAX)
		return -EINVAL;

	ref->transport = OCI_TRANSPORT_REGISTRY;
	r = asprintf(&ref->name, "%s/%s%s%s%s%s", ref->registry, ref->repository, ref->tag ? ":" : "",
		     ref->tag ?: "", ref->digest ? "@" : "", ref->digest ?: "");
	if (r < 0) {
		ref->name = NULL;
		return -ENOMEM;
	}
	return 0;
}

int oci_ref_parse(const char *s, struct oci_ref *ref)
{
	int r;

	memset(ref, 0, sizeof(*ref));
	if (!s)
		return -EINVAL;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return -EINVAL;

	if (strncmp(s, "oci:", 4) == 0)
		r = parse_offline(s + 4, "oci:", OCI_TRANSPORT_OCI_DIR, true, ref);
	else if (strncmp(s, "oci-archive:", 12) == 0)
		r = parse_offline(s + 12, "oci-archive:", OCI_TRANSPORT_OCI_ARCHIVE, true, ref);
	else if (strncmp(s, "docker-archive:", 15) == 0)
		r = parse_offline(s + 15, "docker-archive:", OCI_TRANSPORT_DOCKER_ARCHIVE, false, ref);
	else if (strncmp(s, "docker://", 9) == 0)
		r = parse_registry(s + 9, ref);
	else if (strstr(s, "://") || strncmp(s, "containers-storage:", 19) == 0 ||
		 strncmp(s, "docker-daemon:", 14) == 0 || strncmp(s, "dir:", 4) == 0)
		r = -EINVAL; /* transports aisb does not speak */
	else
		r = parse_registry(s, ref);
	if (r < 0)
		oci_ref_done(ref);
	return r;
}

const char *oci_ref_api_host(const struct oci_ref *ref)
{
	if (ref->registry && streq(ref->registry, "docker.io"))
		return "registry-1.docker.io";
	return ref->registry;
}
