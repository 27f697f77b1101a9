// SPDX-License-Identifier: GPL-2.0-or-later
/* regflags.c — the registry flags shared by pull, update, build, push and run --image */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/regflags.h"
#include "util/log.h"
#include "util/util.h"

int regflag_by_name(const char *name)
{
	return streq(name, "tls-verify") ? REGFLAG_TLS_VERIFY : streq(name, "cert-dir") ? REGFLAG_CERT_DIR
	       : streq(name, "authfile") ? REGFLAG_AUTHFILE : -1;
}

int regflag_tls_verify(const char *value, bool *out)
{
	if (!value || streq(value, "true"))
		*out = true;
	else if (streq(value, "false"))
		*out = false;
	else
		return log_error("--tls-verify takes true or false, not '%s'", value), -EINVAL;
	return 0;
}

int regflag_apply(struct registry_opts *reg, enum regflag flag, const char *value)
{
	char **v;

	switch (flag) {
	case REGFLAG_TLS_VERIFY:
		return regflag_tls_verify(value, &reg->tls_verify);
	case REGFLAG_CERT_DIR:
		if (!value || !*value)
			return log_error("--cert-dir needs a directory"), -EINVAL;
		reg->cert_dir = value;
		return 0;
	case REGFLAG_AUTHFILE:
		if (!value || !*value)
			return log_error("--authfile needs a file"), -EINVAL;
		/* an explicit auth file goes before the ones found in the environment */
		v = calloc(1, sizeof(char *));
		if (!v || strv_push(&v, value) < 0)
			goto oom;
		for (size_t i = 0; reg->auth_files && reg->auth_files[i]; i++)
			if (strv_push(&v, reg->auth_files[i]) < 0)
				goto oom;
		strv_free(reg->auth_files);
		reg->auth_files = v;
		return 0;
	default:
		return log_error("internal error: unknown registry flag %d", (int)flag), -EINVAL;
	}
oom:
	strv_free(v);
	return log_error_errno(-ENOMEM, "%m");
}

int regflags_collect(struct regflags *f, enum regflag flag, const char *value)
{
	bool b;

	switch (flag) {
	case REGFLAG_TLS_VERIFY:
		if (regflag_tls_verify(value, &b) < 0)
			return -EINVAL;
		f->tls_verify = b ? "true" : "false";
		return 0;
	case REGFLAG_CERT_DIR:
		if (!value || !*value)
			return log_error("--cert-dir needs a directory"), -EINVAL;
		f->cert_dir = value;
		return 0;
	case REGFLAG_AUTHFILE:
		if (!value || !*value)
			return log_error("--authfile needs a file"), -EINVAL;
		if (!f->authfiles && !(f->authfiles = calloc(1, sizeof(char *))))
			return log_error_errno(-ENOMEM, "%m");
		return strv_push(&f->authfiles, value) < 0 ? log_error_errno(-ENOMEM, "%m") : 0;
	default:
		return log_error("internal error: unknown registry flag %d", (int)flag), -EINVAL;
	}
}

int regflags_apply(struct registry_opts *reg, const struct regflags *f)
{
	int r = 0;

	if (f->tls_verify)
		r = regflag_apply(reg, REGFLAG_TLS_VERIFY, f->tls_verify);
	if (r == 0 && f->cert_dir)
		r = regflag_apply(reg, REGFLAG_CERT_DIR, f->cert_dir);
	for (size_t i = 0; r == 0 && f->authfiles && f->authfiles[i]; i++)
		r = regflag_apply(reg, REGFLAG_AUTHFILE, f->authfiles[i]);
	return r;
}

void regflags_done(struct regflags *f)
{
	strv_free(f->authfiles);
	f->authfiles = NULL;
}
