// SPDX-License-Identifier: GPL-2.0-or-later
/* policy.c — destination checks of the gate */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/policy.h"
#include "util/log.h"
#include "util/util.h"

/**
 * policy_add_pin() - parse and add `--add-host NAME=IP`
 * @p: policy
 * @spec: "NAME=IP"
 *
 * Return: 0, -EINVAL, -ENOMEM. Logs on failure (naming the value).
 */
int policy_add_pin(struct net_policy *p, const char *spec)
{
	const char *eq = strchr(spec, '=');
	char name[ALLOW_NAME_MAX + 2];
	struct policy_pin pin = { 0 }, *v;

	if (!eq || (size_t)(eq - spec) >= sizeof(name))
		return log_error_errno(-EINVAL, "invalid --add-host '%s' (use NAME=IP)", spec);
	memcpy(name, spec, (size_t)(eq - spec));
	name[eq - spec] = '\0';
	if (allow_normalize_name(name, pin.name, sizeof(pin.name)) < 0)
		return log_error_errno(-EINVAL, "invalid --add-host '%s': '%s' is not a host name", spec, name);
	if (addr_parse(eq + 1, &pin.addr) < 0)
		return log_error_errno(-EINVAL, "invalid --add-host '%s': '%s' is not an IP address", spec, eq + 1);
	if (p->n_pins >= ALLOW_ENTRIES_MAX)
		return log_error_errno(-E2BIG, "too many --add-host entries");
	v = realloc(p->pins, (p->n_pins + 1) * sizeof(*v));
	if (!v)
		return log_error_errno(-ENOMEM, "out of memory");
	v[p->n_pins++] = pin;
	p->pins = v;
	return 0;
}

/**
 * policy_add_host_port() - parse and add `--allow-host-port PORT`
 * @p: policy
 * @spec: port number
 *
 * Return: 0, -EINVAL, -ENOMEM. Logs on failure.
 */
int policy_add_host_port(struct net_policy *p, const char *spec)
{
	unsigned long long v;
	uint16_t *ports;

	if (strlen(spec) > 5 || parse_u64(spec, &v) < 0 || v == 0 || v > 65535)
		return log_error_errno(-EINVAL, "invalid --allow-host-port '%s' (use a port 1-65535)", spec);
	if (p->n_host_ports >= 1024)
		return log_error_errno(-E2BIG, "too many --allow-host-port entries");
	ports = realloc(p->host_ports, (p->n_host_ports + 1) * sizeof(*ports));
	if (!ports)
		return log_error_errno(-ENOMEM, "out of memory");
	ports[p->n_host_ports++] = (uint16_t)v;
	p->host_ports = ports;
	return 0;
}

void policy_free(struct net_policy *p)
{
	allow_list_free(&p->allow);
	free(p->pins);
	free(p->host_ports);
	p->pins = NULL;
	p->host_ports = NULL;
	p->n_pins = p->n_host_ports = 0;
}

/**
 * policy_name_listed() - whether the DNS stub answers @name (some entry matches it, any port)
 * @p: policy
 * @name: normalized name
 *
 * Return: true if listed. Does not log.
 */
bool policy_name_listed(const struct net_policy *p, const char *name)
{
	if (streq(name, POLICY_HOST_INTERNAL))
		return p->n_host_ports > 0;
	for (size_t i = 0; i < p->allow.n; i++) {
		const struct allow_entry *e = &p->allow.v[i];
		struct allow_list one = { .v = (struct allow_entry *)e, .n = 1 };

		if (e->kind != ALLOW_ADDR && allow_match_name(&one, name, e->port ? e->port : 443))
			return true;
	}
	return false;
}

/**
 * policy_suggest_allow() - the exact `--allow` that would permit @host:@port
 * @host: name or address
 * @port: port
 * @literal: @host is an IP address
 * @buf: output
 * @size: its size
 *
 * Does not log.
 */
void policy_suggest_allow(const char *host, uint16_t port, bool literal, char *buf, size_t size)
{
	bool v6 = literal && strchr(host, ':');

	if (port == 443 || port == 80)
		snprintf(buf, size, "--allow %s", host);
	else if (v6)
		snprintf(buf, size, "--allow [%s]:%u", host, port);
	else
		snprintf(buf, size, "--allow %s:%u", host, port);
}

static void deny(struct policy_decision *d, const char *suggest, const char *fmt, ...) _printf_(3, 4);
static void deny(struct policy_decision *d, const char *suggest, const char *fmt, ...)
{
	va_list ap;

	d->step = POLICY_DENY;
	va_start(ap, fmt);
	vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
	va_end(ap);
	snprintf(d->suggest, sizeof(d->suggest), "%s", suggest ? suggest : "");
}

/**
 * policy_check() - decide from the destination alone
 * @p: policy
 * @host: the requested host (name or IP literal, any case)
 * @port: the requested port
 * @d: the decision: DENY with reason, DIAL with d->addrs, or RESOLVE (a listed, unpinned name)
 *
 * Does not log.
 */
void policy_check(const struct net_policy *p, const char *host, uint16_t port, struct policy_decision *d)
{
	struct net_addr a;
	const struct allow_entry *e;
	char suggest[sizeof(d->suggest)];

	memset(d, 0, sizeof(*d));
	d->port = port;
	snprintf(d->host, sizeof(d->host), "%s", host);

	if (addr_parse(host, &a) == 0) {
		d->is_literal = true;
		addr_format(&a, d->host, sizeof(d->host));
		e = allow_match_addr(&p->allow, &a, port);
		if (!e) {
			policy_suggest_allow(d->host, port, true, suggest, sizeof(suggest));
			deny(d, suggest, "IP address %s port %u is not covered by an IP entry", d->host, port);
			return;
		}
		allow_format_entry(e, d->rule, sizeof(d->rule));
		d->addrs[0] = a;
		d->n_addrs = 1;
		d->step = POLICY_DIAL;
		return;
	}
	if (allow_normalize_name(host, d->host, sizeof(d->host)) < 0) {
		snprintf(d->host, sizeof(d->host), "(invalid)");
		deny(d, NULL, "invalid host name");
		return;
	}
	if (streq(d->host, POLICY_HOST_INTERNAL)) {
		for (size_t i = 0; i < p->n_host_ports; i++)
			if (p->host_ports[i] == port) {
				d->host_internal = true;
				addr_parse("127.0.0.1", &d->addrs[0]);
				d->n_addrs = 1;
				d->step = POLICY_DIAL;
				snprintf(d->rule, sizeof(d->rule), "--allow-host-port %u", port);
				return;
			}
		snprintf(suggest, sizeof(suggest), "--allow-host-port %u", port);
		deny(d, suggest, "host port %u is not published with --allow-host-port", port);
		return;
	}
	e = allow_match_name(&p->allow, d->host, port);
	if (!e) {
		policy_suggest_allow(d->host, port, false, suggest, sizeof(suggest));
		if (policy_name_listed(p, d->host))
			deny(d, suggest, "port %u of %s is not allowed (an entry without a port allows 443 and 80)",
			     port, d->host);
		else
			deny(d, suggest, "%s is not in the allowlist", d->host);
		return;
	}
	allow_format_entry(e, d->rule, sizeof(d->rule));
	for (size_t i = 0; i < p->n_pins; i++)
		if (streq(p->pins[i].name, d->host)) {
			d->addrs[d->n_addrs++] = p->pins[i].addr;
			if (d->n_addrs == POLICY_ADDRS_MAX)
				break;
		}
	d->step = d->n_addrs ? POLICY_DIAL : POLICY_RESOLVE;
}

/**
 * policy_filter_resolved() - keep the resolved addresses the gate may dial
 * @p: policy
 * @addrs: what the host's resolver returned for d->host
 * @n: their count
 * @d: a RESOLVE decision; becomes DIAL with the kept addresses, or DENY
 *
 * An address in a special range is kept only if an IP/CIDR entry covers it (the user named it);
 * --add-host pins never get here. Does not log.
 */
void policy_filter_resolved(const struct net_policy *p, const struct net_addr *addrs, size_t n,
			    struct policy_decision *d)
{
	char a[ADDR_STRLEN], suggest[sizeof(d->suggest)];
	const struct net_addr *refused = NULL;

	d->n_addrs = 0;
	for (size_t i = 0; i < n && d->n_addrs < POLICY_ADDRS_MAX; i++) {
		enum addr_class c = addr_classify(&addrs[i]);

		if (c != ADDR_PUBLIC && !allow_match_addr(&p->allow, &addrs[i], 0)) {
			if (!refused)
				refused = &addrs[i];
			continue;
		}
		/* @n addresses are at @addrs (the analyzer lets addr_classify(&addrs[i]) pass with addrs
		 * NULL). NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
		d->addrs[d->n_addrs++] = addrs[i];
	}
	if (d->n_addrs) {
		d->step = POLICY_DIAL;
		return;
	}
	if (!refused) {
		deny(d, NULL, "%s does not resolve on the host", d->host);
		return;
	}
	addr_format(refused, a, sizeof(a));
	snprintf(suggest, sizeof(suggest), "--add-host %s=%s", d->host, a);
	deny(d, suggest, "%s resolves to %s address %s (DNS rebinding guard)", d->host,
	     addr_class_to_string(addr_classify(refused)), a);
}
