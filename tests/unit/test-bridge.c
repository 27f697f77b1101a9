// SPDX-License-Identifier: GPL-2.0-or-later
/* test-bridge.c — the harness config bridges: rewrites, the per-key merge, the TOML subset */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bridge-internal.h"
#include "agents/bridge.h"
#include "agents/harness.h"
#include "cli/resolve.h"
#include "util/log.h"
#include "util/util.h"

#define CANARY "canary-5b1d7e-secret"

static const char *const *fake_env;

static const char *fake_get(const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; fake_env && fake_env[i]; i++)
		if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
			return fake_env[i] + n + 1;
	return NULL;
}

static json_object *J(const char *text)
{
	json_object *o = bridge_json_parse(text, strlen(text));
	if (!o)
		fail_msg("fixture is not a JSON object: %s", text);
	return o;
}

static void assert_json_eq(json_object *got, const char *want)
{
	json_object *w = json_tokener_parse(want);
	assert_non_null(w);
	if (json_object_equal(got, w) != 1)
		fail_msg("got %s\nwant %s", json_object_to_json_string(got), want);
	json_object_put(w);
}

/* Every file the bridge produced, serialized as it would be written, plus the notes. */
static char *all_output(const struct bridge_result *r)
{
	char *out = strdup("");
	for (size_t i = 0; i < r->n_files; i++) {
		char *t = r->files[i].fmt == BRIDGE_JSON ? bridge_json_format(r->files[i].doc)
							 : bridge_toml_format(r->files[i].doc), *n;
		assert_non_null(t);
		assert_true(asprintf(&n, "%s%s", out, t) > 0);
		free(out);
		free(t);
		out = n;
	}
	for (size_t i = 0; r->notes && r->notes[i]; i++) {
		char *n;
		assert_true(asprintf(&n, "%s%s\n", out, r->notes[i]) > 0);
		free(out);
		out = n;
	}
	return out;
}

static bool notes_have(const struct bridge_result *r, const char *needle)
{
	for (size_t i = 0; r->notes && r->notes[i]; i++)
		if (strstr(r->notes[i], needle))
			return true;
	return false;
}

/* ---- merge --------------------------------------------------------------------------------- */

static void test_merge(void **state)
{
	static const struct {
		const char *base, *cur, *host, *want, *what;
	} t[] = {
		{ NULL, NULL, "{\"a\":1}", "{\"a\":1}", "first run: seeded from the host" },
		{ "{\"a\":1}", NULL, "{\"a\":2}", "{\"a\":2}", "deleted file: re-seeded" },
		{ "{\"a\":1,\"b\":1}", "{\"a\":1,\"b\":1}", "{\"a\":2,\"b\":1}", "{\"a\":2,\"b\":1}",
		  "untouched key follows the host" },
		{ "{\"a\":1}", "{\"a\":5}", "{\"a\":2}", "{\"a\":5}", "sandbox edit wins over a host change" },
		{ "{\"a\":1}", "{\"a\":1,\"x\":true}", "{\"a\":1}", "{\"a\":1,\"x\":true}", "invented key survives" },
		{ "{\"a\":1,\"b\":2}", "{\"a\":1}", "{\"a\":1,\"b\":2}", "{\"a\":1}",
		  "key deleted in the sandbox stays deleted" },
		{ "{\"a\":1,\"b\":2}", "{\"a\":1}", "{\"a\":1,\"b\":3}", "{\"a\":1,\"b\":3}",
		  "... unless the host changed it" },
		{ "{\"a\":1,\"b\":2}", "{\"a\":1,\"b\":2}", "{\"a\":1}", "{\"a\":1}",
		  "untouched key removed on the host goes" },
		{ "{\"a\":1}", "{\"a\":1}", "{\"a\":1,\"n\":\"new\"}", "{\"a\":1,\"n\":\"new\"}", "new host key arrives" },
		{ "{\"p\":{\"x\":{\"u\":\"h1\",\"k\":\"K\"}}}", "{\"p\":{\"x\":{\"u\":\"mine\",\"k\":\"K\"}}}",
		  "{\"p\":{\"x\":{\"u\":\"h2\",\"k\":\"K2\"}}}", "{\"p\":{\"x\":{\"u\":\"mine\",\"k\":\"K2\"}}}",
		  "objects merge per key, recursively" },
		{ "{\"l\":[1,2]}", "{\"l\":[1,2]}", "{\"l\":[3]}", "{\"l\":[3]}", "arrays are values" },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		json_object *b = t[i].base ? J(t[i].base) : NULL, *c = t[i].cur ? J(t[i].cur) : NULL;
		json_object *h = J(t[i].host), *m = bridge_merge(b, c, h);
		assert_non_null(m);
		print_message("merge: %s\n", t[i].what);
		assert_json_eq(m, t[i].want);
		json_object_put(b);
		json_object_put(c);
		json_object_put(h);
		json_object_put(m);
	}
}

/* ---- URLs and values ---------------------------------------------------------------------- */

static void test_url(void **state)
{
	static const struct {
		const char *url;
		int r;
		const char *host;
		unsigned port;
		bool lo;
		const char *rewritten;
	} t[] = {
		{ "http://127.0.0.1:11434/v1", 0, BRIDGE_HOST_INTERNAL, 11434, true, "http://host.aisb.internal:11434/v1" },
		{ "http://127.3.4.5:8080", 0, BRIDGE_HOST_INTERNAL, 8080, true, "http://host.aisb.internal:8080" },
		{ "http://localhost/v1", 0, BRIDGE_HOST_INTERNAL, 80, true, "http://host.aisb.internal:80/v1" },
		{ "https://LOCALHOST:9/x?y", 0, BRIDGE_HOST_INTERNAL, 9, true, "https://host.aisb.internal:9/x?y" },
		{ "http://[::1]:5000/v1", 0, BRIDGE_HOST_INTERNAL, 5000, true, "http://host.aisb.internal:5000/v1" },
		{ "https://api.example.com/v1", 0, "api.example.com", 443, false, "https://api.example.com/v1" },
		{ "https://api.example.com:8443", 0, "api.example.com", 8443, false, "https://api.example.com:8443" },
		{ "http://[2001:db8::1]:80/", 0, "2001:db8::1", 80, false, "http://[2001:db8::1]:80/" },
		{ "http://user:" CANARY "@127.0.0.1:1/", -EINVAL, NULL, 0, false, NULL },
		{ "ftp://example.com", -EINVAL, NULL, 0, false, NULL },
		{ "http://example.com:0", -EINVAL, NULL, 0, false, NULL },
		{ "http://example.com:99999", -EINVAL, NULL, 0, false, NULL },
		{ "http://:80", -EINVAL, NULL, 0, false, NULL },
		{ "http://ex.com:80x", -EINVAL, NULL, 0, false, NULL },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		char host[256];
		uint16_t port = 0;
		bool lo = false;
		char *rw = NULL;
		int r = bridge_url_endpoint(t[i].url, host, sizeof(host), &port, &lo, &rw);
		if (r != t[i].r)
			fail_msg("%s: %d != %d", t[i].url, r, t[i].r);
		if (r < 0)
			continue;
		assert_string_equal(host, t[i].host);
		assert_int_equal(port, t[i].port);
		assert_int_equal(lo, t[i].lo);
		assert_string_equal(rw, t[i].rewritten);
		free(rw);
	}
	assert_true(bridge_value_in_home("/home/u/.pi/x", "/home/u"));
	assert_true(bridge_value_in_home("~/x", "/home/u"));
	assert_true(bridge_value_in_home("file:///home/u/x", "/home/u"));
	assert_false(bridge_value_in_home("/home/user2/x", "/home/u"));
	assert_false(bridge_value_in_home("/usr/bin/x", "/home/u"));
	assert_false(bridge_value_in_home("/home/u/x", "/"));
	assert_true(bridge_thinking_valid("xhigh"));
	assert_false(bridge_thinking_valid("ultra"));
}

/* ---- pi ------------------------------------------------------------------------------------ */

static const char pi_models[] =
	"{\"providers\":{"
	" \"local\":{\"baseUrl\":\"http://127.0.0.1:4000/v1\",\"api\":\"openai-completions\",\"apiKey\":\"" CANARY "\","
	"  \"headers\":{\"X-Cmd\":\"!cat /home/u/secret\",\"Authorization\":\"Bearer " CANARY "\",\"X-Env\":\"MY_HDR\"},"
	"  \"models\":[{\"id\":\"m\",\"baseUrl\":\"http://localhost:4001\",\"headers\":{\"X-Lit\":\"" CANARY "\"}}]},"
	" \"cmd\":{\"baseUrl\":\"https://llm.example.com\",\"apiKey\":\"!pass show " CANARY "\"},"
	" \"named\":{\"baseUrl\":\"https://named.example.com\",\"apiKey\":\"NAMED_KEY\"}},"
	" \"extra\":\"/home/u/.pi/agent/x\"}";
static const char pi_settings[] =
	"{\"defaultProvider\":\"local\",\"defaultModel\":\"m\",\"defaultThinkingLevel\":\"low\","
	" \"extensions\":[\"/home/u/ext.js\",\"/opt/ext.js\"],\"theme\":\"dark\",\"sessionDir\":\"~/s\"}";

static void test_pi(void **state)
{
	static const char *const env[] = { "NAMED_KEY=" CANARY, "MY_HDR=" CANARY, NULL };
	struct bridge_ctx c = { .host_home = "/home/u", .token_env = "AI_API_TOKEN", .thinking = "xhigh",
				.project_dst = "/work/p", .get = fake_get };
	struct bridge_result r = { .n_files = 0 };
	json_object *m = J(pi_models), *s = J(pi_settings), *prov;
	char *out;

	fake_env = env;
	assert_int_equal(bridge_pi((json_object *[]){ m, s }, &c, &r), 0);
	assert_int_equal(r.n_files, 2);
	assert_string_equal(r.files[0].rel, ".pi/agent/models.json");
	assert_string_equal(r.files[1].rel, ".pi/agent/settings.json");
	prov = json_object_object_get(json_object_object_get(r.files[0].doc, "providers"), "local");
	/* a literal key becomes the one token variable; the loopback URL host.aisb.internal */
	assert_string_equal(json_object_get_string(json_object_object_get(prov, "apiKey")), "AI_API_TOKEN");
	assert_string_equal(json_object_get_string(json_object_object_get(prov, "baseUrl")),
			    "http://host.aisb.internal:4000/v1");
	/* headers: command and literals dropped, the variable kept */
	assert_json_eq(json_object_object_get(prov, "headers"), "{\"X-Env\":\"MY_HDR\"}");
	assert_json_eq(json_object_array_get_idx(json_object_object_get(prov, "models"), 0),
		       "{\"id\":\"m\",\"baseUrl\":\"http://host.aisb.internal:4001\",\"headers\":{}}");
	/* a command key becomes the token variable too; a key naming a set variable keeps it */
	prov = json_object_object_get(json_object_object_get(r.files[0].doc, "providers"), "cmd");
	assert_string_equal(json_object_get_string(json_object_object_get(prov, "apiKey")), "AI_API_TOKEN");
	prov = json_object_object_get(json_object_object_get(r.files[0].doc, "providers"), "named");
	assert_string_equal(json_object_get_string(json_object_object_get(prov, "apiKey")), "NAMED_KEY");
	assert_true(r.need_token);
	assert_true(strv_contains(r.pass, "NAMED_KEY"));
	assert_true(strv_contains(r.pass, "MY_HDR"));
	assert_false(strv_contains(r.pass, "AI_API_TOKEN")); /* bridge_resolve() adds it, once checked */
	/* settings: home paths dropped, thinking forced, the rest kept */
	assert_json_eq(r.files[1].doc, "{\"defaultProvider\":\"local\",\"defaultModel\":\"m\","
		       "\"defaultThinkingLevel\":\"xhigh\",\"extensions\":[\"/opt/ext.js\"],\"theme\":\"dark\"}");
	assert_json_eq(r.files[1].force, "{\"defaultThinkingLevel\":\"xhigh\"}");
	assert_null(json_object_object_get(r.files[0].doc, "extra"));
	/* the endpoint that must be allowed: the default provider's only */
	assert_int_equal(r.n_ep, 1);
	assert_string_equal(r.ep[0].host, BRIDGE_HOST_INTERNAL);
	assert_int_equal(r.ep[0].port, 4000);
	assert_true(r.ep[0].loopback);
	assert_true(notes_have(&r, "dropped header 'X-Cmd'"));
	assert_true(notes_have(&r, "never runs host commands"));
	assert_true(notes_have(&r, "dropped 'sessionDir'"));
	/* the canary: nowhere in what would be written or announced */
	out = all_output(&r);
	assert_null(strstr(out, CANARY));
	assert_null(strstr(out, "/home/u/secret"));
	free(out);
	bridge_result_done(&r);

	/* --thinking host: the host's level stays and nothing is forced; no defaultProvider: every
	 * provider's endpoint is needed */
	c.thinking = NULL;
	json_object_object_del(s, "defaultProvider");
	assert_int_equal(bridge_pi((json_object *[]){ m, s }, &c, &r), 0);
	assert_string_equal(json_object_get_string(json_object_object_get(r.files[1].doc, "defaultThinkingLevel")), "low");
	assert_null(r.files[1].force);
	assert_int_equal(r.n_ep, 3);
	bridge_result_done(&r);

	/* a built-in default provider: its known endpoint, its key variable by name when set */
	{
		static const char *const env2[] = { "ANTHROPIC_API_KEY=" CANARY, NULL };
		json_object *s2 = J("{\"defaultProvider\":\"anthropic\"}");
		fake_env = env2;
		assert_int_equal(bridge_pi((json_object *[]){ NULL, s2 }, &c, &r), 0);
		assert_int_equal(r.n_ep, 1);
		assert_string_equal(r.ep[0].host, "api.anthropic.com");
		assert_true(strv_contains(r.pass, "ANTHROPIC_API_KEY"));
		bridge_result_done(&r);
		json_object_put(s2);
		fake_env = env;
	}

	/* no host config at all: a settings file with the thinking level, no models file, no token */
	c.thinking = "medium";
	assert_int_equal(bridge_pi((json_object *[]){ NULL, NULL }, &c, &r), 0);
	assert_int_equal(r.n_files, 1);
	assert_json_eq(r.files[0].doc, "{\"defaultThinkingLevel\":\"medium\"}");
	assert_false(r.need_token);
	assert_int_equal(r.n_ep, 0);
	bridge_result_done(&r);
	json_object_put(m);
	json_object_put(s);
	fake_env = NULL;
}

/* ---- TOML ---------------------------------------------------------------------------------- */

static const char codex_toml[] =
	"# codex config\n"
	"model = \"gpt-x\"   # trailing comment\n"
	"model_provider = \"local\"\n"
	"approval_policy = 'on-request'\n"
	"model_reasoning_effort = \"high\"\n"
	"notify = [\"notify-send\", \"codex\"]\n"
	"n = 1_000\n"
	"hex = 0x1f\n"
	"f = 0.5\n"
	"neg = -3\n"
	"flag = true\n"
	"multi = \"\"\"\nline1\nline2 \\\"q\\\"\"\"\"\n"
	"lit = '''raw \\n'''\n"
	"esc = \"tab\\tnl\\nu\\u00e9\"\n"
	"dotted.key = \"v\"\n"
	"arr = [\n  1,\n  2, # two\n  3,\n]\n"
	"inline = { a = 1, \"b c\" = \"x\", nested = { d = false } }\n"
	"\n"
	"[model_providers.local]\n"
	"name = \"Local\"\n"
	"base_url = \"http://127.0.0.1:11434/v1\"\n"
	"env_key = \"LOCAL_KEY\"\n"
	"experimental_bearer_token = \"" CANARY "\"\n"
	"http_headers = { \"X-Key\" = \"" CANARY "\" }\n"
	"env_http_headers = { \"X-Org\" = \"ORG_VAR\" }\n"
	"\n"
	"[model_providers.\"other.one\"]\n"
	"base_url = \"https://api.example.com/v1\"\n"
	"\n"
	"[mcp_servers.docs]\n"
	"command = \"/usr/bin/docs-mcp\"\n"
	"env = { TOKEN = \"" CANARY "\" }\n"
	"\n"
	"[[profiles_list]]\n"
	"name = \"a\"\n"
	"[[profiles_list]]\n"
	"name = \"b\"\n"
	"\n"
	"[projects.\"/home/u/old\"]\n"
	"trust_level = \"trusted\"\n";

static void test_toml(void **state)
{
	json_object *doc = NULL, *again = NULL;
	char err[160], *text;
	int r;

	r = bridge_toml_parse(codex_toml, &doc, err, sizeof(err));
	if (r < 0)
		fail_msg("parse: %s", err);
	assert_string_equal(json_object_get_string(json_object_object_get(doc, "approval_policy")), "on-request");
	assert_int_equal(json_object_get_int64(json_object_object_get(doc, "n")), 1000);
	assert_int_equal(json_object_get_int64(json_object_object_get(doc, "hex")), 31);
	assert_int_equal(json_object_get_int64(json_object_object_get(doc, "neg")), -3);
	assert_string_equal(json_object_get_string(json_object_object_get(doc, "multi")), "line1\nline2 \"q\"");
	assert_string_equal(json_object_get_string(json_object_object_get(doc, "lit")), "raw \\n");
	assert_string_equal(json_object_get_string(json_object_object_get(doc, "esc")), "tab\tnl\nu\xc3\xa9");
	assert_json_eq(json_object_object_get(doc, "dotted"), "{\"key\":\"v\"}");
	assert_json_eq(json_object_object_get(doc, "arr"), "[1,2,3]");
	assert_json_eq(json_object_object_get(doc, "inline"), "{\"a\":1,\"b c\":\"x\",\"nested\":{\"d\":false}}");
	assert_json_eq(json_object_object_get(doc, "profiles_list"), "[{\"name\":\"a\"},{\"name\":\"b\"}]");
	assert_non_null(json_object_object_get(json_object_object_get(doc, "model_providers"), "other.one"));
	/* the writer's output reads back to the same document */
	text = bridge_toml_format(doc);
	assert_non_null(text);
	r = bridge_toml_parse(text, &again, err, sizeof(err));
	if (r < 0)
		fail_msg("re-parse: %s\n%s", err, text);
	assert_int_equal(json_object_equal(doc, again), 1);
	free(text);
	json_object_put(again);
	json_object_put(doc);

	/* refused, with the line and never the value */
	static const struct { const char *text, *err; } bad[] = {
		{ "a = 1\na = 2\n", "line 2: a key is defined twice" },
		{ "when = 1979-05-27\n", "line 1: dates and times are not supported" },
		{ "t = 07:32:00\n", "line 1: dates and times are not supported" },
		{ "x = \"" CANARY "\n", "line 1: newline in a string" },
		{ "x = inf\n", "line 1: inf and nan are not supported" },
		{ "x = 1 y\n", "line 1: unexpected text after a value" },
		{ "[a]\nb = 1\n[a.b]\n", "line 3: a key is both a value and a table" },
		{ "x = [1, 2\n", "line 2: expected ',' or ']' in an array" },
		{ "= 1\n", "line 1: expected a key" },
		{ "x = \"\\q\"\n", "line 1: unknown escape in a string" },
		{ "x = \"\\u0000\"\n", "line 1: bad \\u escape" }, /* found by fuzz-bridge */
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		doc = NULL;
		assert_int_equal(bridge_toml_parse(bad[i].text, &doc, err, sizeof(err)), -EINVAL);
		assert_null(doc);
		if (!streq(err, bad[i].err))
			fail_msg("'%s': got '%s', want '%s'", bad[i].text, err, bad[i].err);
		assert_null(strstr(err, CANARY));
	}
	/* depth is bounded */
	{
		char deep[256] = "x = ";
		for (int i = 0; i < 40; i++)
			strcat(deep, "[");
		strcat(deep, "\n");
		assert_int_equal(bridge_toml_parse(deep, &doc, err, sizeof(err)), -EINVAL);
	}
}

static void test_codex(void **state)
{
	static const char *const env[] = { "LOCAL_KEY=" CANARY, "ORG_VAR=org", NULL };
	struct bridge_ctx c = { .host_home = "/home/u", .token_env = "AI_API_TOKEN", .project_dst = "/work/p",
				.get = fake_get };
	struct bridge_result r = { .n_files = 0 };
	json_object *doc = NULL, *prov;
	char err[160], *out;

	fake_env = env;
	assert_int_equal(bridge_toml_parse(codex_toml, &doc, err, sizeof(err)), 0);
	assert_int_equal(bridge_codex((json_object *[]){ doc }, &c, &r), 0);
	assert_int_equal(r.n_files, 1);
	assert_string_equal(r.files[0].rel, ".codex/config.toml");
	prov = json_object_object_get(json_object_object_get(r.files[0].doc, "model_providers"), "local");
	assert_json_eq(prov, "{\"name\":\"Local\",\"base_url\":\"http://host.aisb.internal:11434/v1\","
		       "\"env_key\":\"LOCAL_KEY\",\"env_http_headers\":{\"X-Org\":\"ORG_VAR\"}}");
	assert_true(strv_contains(r.pass, "LOCAL_KEY"));
	assert_true(strv_contains(r.pass, "ORG_VAR"));
	assert_false(r.need_token);
	assert_string_equal(json_object_get_string(json_object_object_get(r.files[0].doc, "sandbox_mode")),
			    "danger-full-access");
	assert_json_eq(json_object_object_get(r.files[0].doc, "projects"),
		       "{\"/work/p\":{\"trust_level\":\"trusted\"}}"); /* the host's old project was in $HOME: dropped */
	assert_json_eq(json_object_object_get(json_object_object_get(r.files[0].doc, "mcp_servers"), "docs"),
		       "{\"command\":\"/usr/bin/docs-mcp\"}");
	assert_int_equal(r.n_ep, 1);
	assert_int_equal(r.ep[0].port, 11434);
	assert_true(r.ep[0].loopback);
	assert_true(notes_have(&r, "without its own sandbox"));
	out = all_output(&r);
	assert_null(strstr(out, CANARY));
	free(out);
	bridge_result_done(&r);

	/* the provider's key variable unset on the host: needed (bridge_resolve refuses) */
	fake_env = NULL;
	assert_int_equal(bridge_codex((json_object *[]){ doc }, &c, &r), 0);
	assert_true(r.need_token);
	assert_non_null(strstr(r.token_origin, "LOCAL_KEY"));
	bridge_result_done(&r);
	json_object_put(doc);

	/* no config: the built-in openai provider, its endpoint, the forced sandbox mode */
	assert_int_equal(bridge_codex((json_object *[]){ NULL }, &c, &r), 0);
	assert_int_equal(r.n_ep, 1);
	assert_string_equal(r.ep[0].host, "api.openai.com");
	assert_true(notes_have(&r, "OPENAI_API_KEY is not set"));
	bridge_result_done(&r);
}

/* ---- claude -------------------------------------------------------------------------------- */

static void test_claude(void **state)
{
	static const char *const env[] = { "ANTHROPIC_API_KEY=" CANARY, "ANTHROPIC_BASE_URL=http://127.0.0.1:7000", NULL };
	struct bridge_ctx c = { .host_home = "/home/u", .token_env = "AI_API_TOKEN", .project_dst = "/work/p",
				.get = fake_get };
	struct bridge_result r = { .n_files = 0 };
	json_object *st = J("{\"theme\":\"light\",\"oauthAccount\":{\"emailAddress\":\"" CANARY "\"},"
			    "\"primaryApiKey\":\"" CANARY "\",\"customApiKeyResponses\":{\"approved\":[\"" CANARY "\"]},"
			    "\"mcpServers\":{\"x\":{\"env\":{\"T\":\"" CANARY "\"}}},\"projects\":{\"/home/u/p\":{}}}");
	json_object *se = J("{\"apiKeyHelper\":\"/usr/local/bin/key " CANARY "\",\"model\":\"opus\","
			    "\"env\":{\"ANTHROPIC_API_KEY\":\"" CANARY "\",\"MY_TOKEN\":\"" CANARY "\",\"FOO\":\"bar\"},"
			    "\"hooks\":{\"Stop\":[{\"command\":\"~/hook.sh\"}]}}");
	char *out;

	fake_env = env;
	assert_int_equal(bridge_claude((json_object *[]){ st, se }, &c, &r), 0);
	assert_int_equal(r.n_files, 2);
	assert_string_equal(r.files[0].rel, ".claude/.claude.json");
	assert_json_eq(r.files[0].doc, "{\"theme\":\"light\",\"hasCompletedOnboarding\":true,"
		       "\"bypassPermissionsModeAccepted\":true,\"projects\":{\"/work/p\":{\"hasTrustDialogAccepted\":true,"
		       "\"hasCompletedProjectOnboarding\":true}}}");
	assert_json_eq(r.files[1].doc, "{\"model\":\"opus\",\"env\":{\"FOO\":\"bar\","
		       "\"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\":\"1\",\"DISABLE_AUTOUPDATER\":\"1\"},"
		       "\"hooks\":{\"Stop\":[{}]},\"permissions\":{\"defaultMode\":\"bypassPermissions\","
		       "\"disableAutoMode\":\"disable\"},\"apiKeyHelper\":\"printenv AISB_ANTHROPIC_API_KEY\","
		       "\"skipDangerousModePermissionPrompt\":true}");
	assert_true(strv_contains(r.alias, "AISB_ANTHROPIC_API_KEY=ANTHROPIC_API_KEY"));
	assert_true(strv_contains(r.set, "ANTHROPIC_BASE_URL=http://host.aisb.internal:7000"));
	assert_true(strv_contains(r.set, "CLAUDE_CONFIG_DIR=/home/sandbox/.claude"));
	assert_int_equal(r.n_ep, 1);
	assert_int_equal(r.ep[0].port, 7000);
	assert_true(r.ep[0].loopback);
	assert_true(notes_have(&r, "dropped apiKeyHelper"));
	assert_true(notes_have(&r, "dropped env.MY_TOKEN"));
	out = all_output(&r);
	assert_null(strstr(out, CANARY));
	free(out);
	bridge_result_done(&r);

	/* the host's own permission mode wins; no base URL: Anthropic's endpoint */
	fake_env = NULL;
	json_object_object_add(se, "permissions", J("{\"defaultMode\":\"acceptEdits\"}"));
	assert_int_equal(bridge_claude((json_object *[]){ NULL, se }, &c, &r), 0);
	assert_string_equal(json_object_get_string(json_object_object_get(
				    json_object_object_get(r.files[1].doc, "permissions"), "defaultMode")), "acceptEdits");
	assert_string_equal(r.ep[0].host, "api.anthropic.com");
	assert_null(r.pass);
	assert_null(r.alias);
	bridge_result_done(&r);
	json_object_put(st);
	json_object_put(se);
}

static void test_json_bounds(void **state)
{
	char deep[40 * 5 + 1]; /* 40 times '{"a":' and the NUL (the sanitizer build caught 200) */
	assert_null(bridge_json_parse("[1]", 3));            /* not an object */
	assert_null(bridge_json_parse("{} x", 4));           /* trailing garbage */
	assert_null(bridge_json_parse("{\"a\":", 5));        /* truncated */
	for (int i = 0; i < 40; i++)
		memcpy(deep + 5 * i, "{\"a\":", 5);
	deep[40 * 5] = '\0';
	assert_null(bridge_json_parse(deep, strlen(deep)));  /* too deep */
	{
		json_object *o = bridge_json_parse("{\"a\":1}\n", 8);
		assert_non_null(o);
		json_object_put(o);
	}
}

/* The refusal at the plan level: a harness with the default network and nothing allowed. The
 * bridge is a stage of plan_resolve(), the one resolver, so the refusal is its answer. */
static void test_resolve_refusal(void **state)
{
	static const char *const env[] = { "HOME=/nonexistent-home-for-test", NULL };
	struct aisb_settings s;
	struct aisb_plan p = { 0 };

	fake_env = env;
	log_set_quiet(true);
	args_defaults(&s);
	s.no_cwd = true;
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 78);
	plan_free(&p);
	/* control: --net none is the user's choice; a '--' command is never bridged */
	s.net = NET_NONE;
	s.net_source = SRC_FLAG;
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 0);
	plan_free(&p);
	s.net = NET_ALLOW;
	s.net_source = SRC_DEFAULT;
	strv_push(&s.command, "true");
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 0);
	assert_null(p.bridge);
	plan_free(&p);
	/* a bad --thinking is refused listing the levels */
	s.thinking = strdup("ultra");
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 78);
	plan_free(&p);
	settings_free(&s);
	log_set_quiet(false);
	fake_env = NULL;
}

/* The harness table: lookups, the names for messages, subcommands, the --no-*-config switch, and
 * every row complete (a bridge, a switch, at least one host file, and the bridge runs on no file). */
static void test_harness_table(void **state)
{
	struct aisb_settings st = { .net = NET_ALLOW };
	const struct harness *h;
	size_t n = 0;

	(void)state;
	st.no_harness_config[harness_index(harness_find("codex"))] = true;
	assert_non_null(harness_find("pi"));
	assert_string_equal(harness_find("codex")->name, "codex");
	assert_null(harness_find("shell"));
	assert_null(harness_find("gemini"));
	assert_null(harness_find(NULL));
	assert_null(harness_find("p"));
	assert_non_null(harness_findn("claude,pi", 6));
	assert_null(harness_findn("claude", 5));
	assert_string_equal(harness_names("or"), "pi, codex or claude");
	assert_string_equal(harness_names(NULL), "pi codex claude");
	assert_true(harness_has_subcommand(harness_find("codex"), "exec"));
	assert_false(harness_has_subcommand(harness_find("codex"), "exe"));
	assert_false(harness_has_subcommand(harness_find("codex"), ""));
	assert_false(harness_has_subcommand(harness_find("codex"), "exec review"));
	assert_false(harness_has_subcommand(harness_find("pi"), "exec"));
	assert_true(harness_has_subcommand(harness_find("claude"), "rm"));
	assert_false(harness_has_subcommand(NULL, "rm"));
	assert_true(harness_config_off(harness_find("codex"), &st));
	assert_false(harness_config_off(harness_find("pi"), &st));
	assert_false(harness_config_off(harness_find("claude"), &st));
	for (; (h = harness_at(n)); n++) {
		struct bridge_ctx c = { .host_home = "/home/u", .token_env = "AI_API_TOKEN", .get = fake_get };
		struct bridge_result r = { .n_files = 0 };

		assert_non_null(h->bridge);
		assert_non_null(h->files[0].rel);
		assert_true(strncmp(h->no_config_flag, "--no-", 5) == 0);
		assert_ptr_equal(harness_find(h->name), h);
		assert_int_equal(harness_index(h), n);
		assert_true(!h->fetches == !h->fetches_hint);
		assert_int_equal(h->bridge(NULL, &c, &r), 0);
		bridge_result_done(&r);
	}
	assert_int_equal(n, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_url),
		cmocka_unit_test(test_pi),
		cmocka_unit_test(test_toml),
		cmocka_unit_test(test_codex),
		cmocka_unit_test(test_claude),
		cmocka_unit_test(test_json_bounds),
		cmocka_unit_test(test_resolve_refusal),
		cmocka_unit_test(test_harness_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
