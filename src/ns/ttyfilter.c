// SPDX-License-Identifier: GPL-2.0-or-later
/* ttyfilter.c — the pty relay's terminal control-sequence filter (a VT500-style parser)
 *
 * The states follow the DEC VT500 parser that xterm, VTE and most emulators implement, so that
 * where this filter believes a sequence ends, the terminal would too. Only complete sequences
 * are ever emitted; what is dropped is dropped from its introducer to its terminator, and the
 * terminal never sees its start, so no partial sequence can leave the terminal in a state the
 * filter does not know.
 */
#include <stdbool.h>
#include <string.h>

#include "ns/ttyfilter.h"
#include "util/macro.h"

#define ESC 0x1b
#define BEL 0x07
#define CAN 0x18
#define SUB 0x1a
#define DEL 0x7f
#define CSI_PARAMS_MAX 256 /* SGR with truecolour fore- and background is ~40 bytes */

/* Byte classes of the ground state's fast path; BC_LEAD0 + N is a byte that a UTF-8 decoder
 * follows with N continuation bytes (0 for ASCII, C0 controls and invalid leads). */
enum {
	BC_SLOW,    /* ESC, 0xC2: the state machine decides */
	BC_CONT_C1, /* 0x80..0x9F: a continuation, or else a raw C1 control */
	BC_CONT,    /* 0xA0..0xBF */
	BC_LEAD0,
	BC_LEAD1,
	BC_LEAD2,
	BC_LEAD3,
};

static const uint8_t byte_class[256] = {
	[0x00 ... ESC - 1] = BC_LEAD0, [ESC] = BC_SLOW,          [ESC + 1 ... 0x7f] = BC_LEAD0,
	[0x80 ... 0x9f] = BC_CONT_C1,  [0xa0 ... 0xbf] = BC_CONT, [0xc0 ... 0xc1] = BC_LEAD0,
	[0xc2] = BC_SLOW,              [0xc3 ... 0xdf] = BC_LEAD1, [0xe0 ... 0xef] = BC_LEAD2,
	[0xf0 ... 0xf4] = BC_LEAD3,    [0xf5 ... 0xff] = BC_LEAD0,
};

/* Whether the 8 bytes at @p are all printable ASCII (0x20..0x7e): no high bit, no byte that
 * 0x01 carries into the high bit (0x7f), none below 0x20. */
static inline bool printable8(const char *p)
{
	const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
	uint64_t w;

	memcpy(&w, p, 8);
	if (w & high)
		return false;
	return !(((w + ones) | ((w - 0x20 * ones) & ~w)) & high);
}

enum state {
	ST_GROUND,
	ST_UTF8_C2,  /* held 0xC2: C2 80..9F is a C1 control in UTF-8 */
	ST_ESC,      /* seq holds ESC */
	ST_ESC_INTER,
	ST_CSI,      /* seq holds ESC [ params... */
	ST_CSI_INTER,
	ST_CSI_IGNORE,
	ST_OSC,      /* seq holds the payload only */
	ST_OSC_ESC,
	ST_STR,      /* DCS SOS PM APC: swallowed */
	ST_STR_ESC,
};

void ttyfilter_init(struct ttyfilter *f, bool passthrough)
{
	memset(f, 0, sizeof(*f));
	f->passthrough = passthrough;
}

uint64_t ttyfilter_dropped(const struct ttyfilter *f)
{
	uint64_t n = 0;
	for (int i = 0; i < TTYFILTER_DROP_MAX; i++)
		n += f->dropped[i];
	return n;
}

static void drop(struct ttyfilter *f, enum ttyfilter_drop why)
{
	f->dropped[why]++;
	f->seq_len = 0;
	f->seq_bad = false;
	f->state = ST_GROUND;
}

static void push(struct ttyfilter *f, char c)
{
	if (f->seq_len < sizeof(f->seq))
		f->seq[f->seq_len++] = c;
	else
		f->seq_bad = true;
}

static size_t emit_seq(struct ttyfilter *f, char *out, char last)
{
	size_t n = f->seq_len;
	memcpy(out, f->seq, n);
	out[n++] = last;
	f->seq_len = 0;
	f->state = ST_GROUND;
	return n;
}

static void start_esc(struct ttyfilter *f)
{
	f->seq_len = 0;
	f->seq_bad = false;
	f->seq[f->seq_len++] = ESC;
	f->state = ST_ESC;
	f->utf8_left = 0;
}

/* ---- CSI: an allowlist ----------------------------------------------------------------------
 *
 * Only the CSI sequences a harness's TUI (and a shell, an editor, tmux inside the sandbox) draws
 * with pass, each with the parameters it needs; everything else is dropped (issue 22: DECRQCRA,
 * `CSI Pi;Pp;Pt;Pl;Pb;Pr * y`, passed, and xterm and WezTerm answer it with a checksum of the
 * rectangle's cells, so the sandbox could read the visible screen back cell by cell). The
 * review of xterm's, VTE's, kitty's, WezTerm's and tmux's requests and replies behind the table
 * is in docs/threat-model.md ("Terminal"). A query passes only when its answer tells the
 * sandbox nothing but the terminal's own state (DA, DSR/CPR, DECRQM, XTVERSION, size reports,
 * the kitty keyboard flags); a mode passes only when it changes how the cells are drawn or how
 * keys and the mouse are encoded.
 */

enum csi_check {
	CK_ANY,        /* any numeric parameters */
	CK_NONE,       /* no parameter (or only 0) */
	CK_ONE,        /* at most one parameter */
	CK_SGR,        /* SGR: parameters with ':' sub-parameters */
	CK_ANSI_MODES, /* SM/RM: each parameter in ansi_modes[] */
	CK_DEC_MODES,  /* DECSET/DECRST/XTSAVE/XTRESTORE: each in dec_modes[] */
	CK_DSR,        /* 5 (status), 6 (cursor position) */
	CK_DEC_DSR,    /* ?6 (cursor position), ?996 (colour scheme) */
	CK_WINOPS,     /* XTWINOPS: the size reports and the title stack only */
	CK_MAX,
};

struct csi_rule {
	char prefix;   /* a private marker '<' '=' '>' '?' first in the parameters, or 0 */
	char inter;    /* the one intermediate byte, or 0 */
	char fin;
	uint8_t check; /* enum csi_check */
};

static const struct csi_rule csi_rules[] = {
	/* the most frequent first: csi_allowed() scans the table. A CSI-dense stream (1.6 M
	 * truecolour SGR, CUP and EL in 16.8 MB; five runs each at load 8) took 0.07-0.09 s of
	 * CPU with the table in ECMA-48 order, 0.05-0.07 s with these first, 0.04-0.05 s before
	 * the allowlist; plain text is unchanged (the ground fast path never gets here) */
	{ 0, 0, 'm', CK_SGR },  /* SGR */
	{ 0, 0, 'H', CK_ANY },  /* CUP */
	{ 0, 0, 'K', CK_ONE },  /* EL */
	/* editing and cursor movement (ECMA-48) */
	{ 0, 0, '@', CK_ONE },  /* ICH */
	{ 0, 0, 'A', CK_ONE },  /* CUU */
	{ 0, 0, 'B', CK_ONE },  /* CUD */
	{ 0, 0, 'C', CK_ONE },  /* CUF */
	{ 0, 0, 'D', CK_ONE },  /* CUB */
	{ 0, 0, 'E', CK_ONE },  /* CNL */
	{ 0, 0, 'F', CK_ONE },  /* CPL */
	{ 0, 0, 'G', CK_ONE },  /* CHA */
	{ 0, 0, 'I', CK_ONE },  /* CHT */
	{ 0, 0, 'J', CK_ONE },  /* ED, incl. 3 (scrollback) */
	{ 0, 0, 'L', CK_ONE },  /* IL */
	{ 0, 0, 'M', CK_ONE },  /* DL */
	{ 0, 0, 'P', CK_ONE },  /* DCH */
	{ 0, 0, 'S', CK_ONE },  /* SU */
	{ 0, 0, 'T', CK_ONE },  /* SD (five parameters would be xterm's highlight mouse tracking) */
	{ 0, 0, 'X', CK_ONE },  /* ECH */
	{ 0, 0, 'Z', CK_ONE },  /* CBT */
	{ 0, 0, '`', CK_ONE },  /* HPA */
	{ 0, 0, 'a', CK_ONE },  /* HPR */
	{ 0, 0, 'b', CK_ONE },  /* REP */
	{ 0, 0, 'd', CK_ONE },  /* VPA */
	{ 0, 0, 'e', CK_ONE },  /* VPR */
	{ 0, 0, 'f', CK_ANY },  /* HVP */
	{ 0, 0, 'g', CK_ONE },  /* TBC */
	{ 0, 0, 'r', CK_ANY },  /* DECSTBM */
	{ 0, 0, 's', CK_ANY },  /* SCOSC, DECSLRM */
	{ 0, 0, 'u', CK_NONE }, /* SCORC */
	{ '?', 0, 'J', CK_ONE }, /* DECSED */
	{ '?', 0, 'K', CK_ONE }, /* DECSEL */
	{ 0, ' ', 'q', CK_ONE }, /* DECSCUSR cursor shape */
	{ 0, '!', 'p', CK_NONE }, /* DECSTR soft reset */
	/* modes */
	{ 0, 0, 'h', CK_ANSI_MODES },
	{ 0, 0, 'l', CK_ANSI_MODES },
	{ '?', 0, 'h', CK_DEC_MODES },
	{ '?', 0, 'l', CK_DEC_MODES },
	{ '?', 0, 's', CK_DEC_MODES }, /* XTSAVE */
	{ '?', 0, 'r', CK_DEC_MODES }, /* XTRESTORE */
	/* key encodings: xterm modifyOtherKeys, the kitty keyboard protocol */
	{ '>', 0, 'm', CK_ANY },  /* XTMODKEYS */
	{ '>', 0, 'n', CK_ANY },  /* XTMODKEYS reset */
	{ '?', 0, 'm', CK_ANY },  /* XTQMODKEYS query */
	{ '>', 0, 'u', CK_ONE },  /* push flags */
	{ '<', 0, 'u', CK_ONE },  /* pop flags */
	{ '=', 0, 'u', CK_ANY },  /* set flags */
	{ '?', 0, 'u', CK_NONE }, /* query flags */
	/* queries whose answers are the terminal's own state */
	{ 0, 0, 'c', CK_NONE },     /* DA1 */
	{ '>', 0, 'c', CK_NONE },   /* DA2 */
	{ '>', 0, 'q', CK_NONE },   /* XTVERSION */
	{ 0, 0, 'n', CK_DSR },      /* DSR, CPR */
	{ '?', 0, 'n', CK_DEC_DSR },/* DECXCPR, colour scheme */
	{ 0, '$', 'p', CK_ONE },    /* DECRQM (ANSI mode) */
	{ '?', '$', 'p', CK_ONE },  /* DECRQM (DEC mode) */
	{ 0, 0, 't', CK_WINOPS },   /* XTWINOPS */
};

/* SM/RM: IRM (insert), LNM (newline), 34 (tmux's and screen's terminfo cnorm/cvvis; xterm
 * ignores it). Not KAM (2 locks the keyboard), SRM (12: local echo). */
static const uint16_t ansi_modes[] = { 4, 20, 34 };

/* DECSET/DECRST modes that draw or encode keys and the mouse. Left out on purpose, among
 * others: 2 (DECANM: VT52 mode, whose escapes this filter does not parse), 3 and 40 (DECCOLM:
 * xterm resizes the window), 18/19 (printing), 38 (xterm opens a Tektronix window), 42 (NRCS),
 * 46 (xterm logs the session to a host file), 1001 (highlight tracking waits for the program),
 * 1042/1043 (urgency hint, raise the window on BEL), 1044 (clipboard), 8452 and 80 (sixel). */
static const uint16_t dec_modes[] = {
	1,    /* DECCKM cursor keys */
	4,    /* DECSCLM smooth scroll (terminfo is2/rs2 reset it) */
	5,    /* DECSCNM reverse video */
	6,    /* DECOM origin */
	7,    /* DECAWM autowrap */
	8,    /* DECARM autorepeat */
	9,    /* X10 mouse */
	12,   /* cursor blink */
	25,   /* DECTCEM cursor visible */
	45,   /* reverse wraparound */
	47,   /* alternate screen */
	66,   /* DECNKM keypad */
	67,   /* DECBKM backspace sends BS */
	69,   /* DECLRMM left/right margins */
	1000, 1002, 1003, 1004, 1005, 1006, 1007, 1015, 1016, /* mouse, focus, alternate scroll */
	1034, /* eight-bit meta input (readline's smm on xterm) */
	1035, 1036, 1037, 1039, /* meta/alt/delete key encodings */
	1047, 1048, 1049, /* alternate screen, saved cursor */
	2004, /* bracketed paste */
	2026, /* synchronized output */
	2027, /* grapheme clusters */
	2031, /* colour scheme change reports */
	2048, /* in-band resize reports */
	7727, /* mintty application escape key (tmux sets it on its terminal) */
};

static bool in_list(const uint16_t *list, size_t n, long v)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == v)
			return true;
	return false;
}

/* The parameters of @p..@e (after the private marker), split at ';': numbers of at most 5
 * digits (empty is the default, 0); ':' sub-parameters only for @sgr. Each is checked by
 * @check. Return: whether they all pass. */
static bool csi_params_ok(const char *p, const char *e, enum csi_check check)
{
	unsigned count = 0;

	for (;;) {
		long v = 0;
		int digits = 0;

		for (; p < e && *p >= '0' && *p <= '9'; p++)
			if (++digits <= 5)
				v = v * 10 + (*p - '0');
		if (digits > 5)
			return false;
		while (check == CK_SGR && p < e && *p == ':') /* 38:2::R:G:B */
			for (p++; p < e && *p >= '0' && *p <= '9'; p++)
				;
		if (p < e && *p != ';')
			return false; /* '<' '=' '>' '?' or ':' inside the parameters */
		count++;
		switch (check) {
		case CK_ANY:
		case CK_SGR:
			break;
		case CK_NONE:
			if (v != 0)
				return false;
			break;
		case CK_ONE:
			if (count > 1)
				return false;
			break;
		case CK_ANSI_MODES:
			if (!in_list(ansi_modes, ELEMENTSOF(ansi_modes), v))
				return false;
			break;
		case CK_DEC_MODES:
			if (!in_list(dec_modes, ELEMENTSOF(dec_modes), v))
				return false;
			break;
		case CK_DSR:
			if (count > 1 || (v != 5 && v != 6))
				return false;
			break;
		case CK_DEC_DSR:
			if (count > 1 || (v != 6 && v != 996))
				return false;
			break;
		case CK_WINOPS:
			/* keep the size reports and the title stack a TUI saves and restores; refuse
			 * moving, resizing, iconifying and the title reports (20, 21: they hand the
			 * host window's title, often a host path, to the sandbox) */
			if (count == 1 && v != 14 && v != 16 && v != 18 && v != 19 && v != 22 && v != 23)
				return false;
			break;
		case CK_MAX:
			return false;
		}
		if (p >= e)
			return true;
		p++; /* the ';' */
	}
}

/* Whether the complete CSI in seq (ESC [ parameters intermediates) with final byte @fin may
 * reach the terminal: its (marker, intermediate, final) is in csi_rules[] and its parameters
 * pass the rule's check. */
static bool csi_allowed(const struct ttyfilter *f, char fin)
{
	const char *p = f->seq + 2, *end = f->seq + f->seq_len, *pe;
	char prefix = 0, inter = 0;

	if (p < end && *p >= '<' && *p <= '?')
		prefix = *p++;
	for (pe = p; pe < end && *pe >= 0x30 && *pe <= 0x3f; pe++)
		;
	if (end - pe > 1)
		return false; /* two intermediates: nothing a harness needs */
	if (pe < end)
		inter = *pe;
	for (size_t i = 0; i < ELEMENTSOF(csi_rules); i++) {
		const struct csi_rule *r = &csi_rules[i];

		if (r->prefix == prefix && r->inter == inter && r->fin == fin)
			return csi_params_ok(p, pe, (enum csi_check)r->check);
	}
	return false;
}

/* ESC sequences, an allowlist too: a harness needs save/restore cursor, keypad modes, index and
 * reverse index, RIS, the charset designations and shifts of line drawing, and the visual
 * bell of screen's and tmux's terminfo (ESC g). Left out: ESC Z
 * (DECID, a request), ESC SP F/G (7/8-bit replies), ESC % (leaves UTF-8), ESC $ (ISO 2022
 * multi-byte sets), ESC k (screen and tmux read a window name after it), HP and VT52 remnants. */
static bool esc_final_allowed(char c)
{
	return c && strchr("78=>DEHMcNOgno|}~", c); /* g: screen's and tmux's visual bell */
}

/* @seq..@seq + @n: ESC, then intermediates; @fin the final byte. */
static bool esc_inter_allowed(const char *seq, size_t n, char fin)
{
	if (n < 2)
		return false;
	if (seq[1] == '#') /* DECDHL/DECSWL/DECDWL, DECALN */
		return n == 2 && fin >= '3' && fin <= '8' && fin != '7';
	/* G0..G3 designation, optionally with one more intermediate (ESC ( % 5, DEC supplemental) */
	return strchr("()*+-./", seq[1]) && n <= 3;
}

static bool all_query(const char *s, size_t n)
{
	/* ";?" repeated: the colour queries of OSC 10..19 */
	for (size_t i = 0; i < n; i += 2)
		if (i + 1 >= n || s[i] != ';' || s[i + 1] != '?')
			return false;
	return n > 0;
}

/* OSC payload @s (@n bytes, terminator excluded): is it in the safe set? Colour queries (the
 * answers go to the sandbox, which may ask for the host theme) and colour resets are; every
 * OSC that changes something outside the cells, or hands host data back, is not. */
static bool osc_allowed(const char *s, size_t n, enum ttyfilter_drop *why)
{
	long ps = 0;
	size_t i = 0;

	*why = TTYFILTER_DROP_OSC;
	for (size_t k = 0; k < n; k++)
		if (s[k] < 0x20 || s[k] > 0x7e)
			return false;
	for (; i < n && s[i] >= '0' && s[i] <= '9' && ps < 10000; i++)
		ps = ps * 10 + (s[i] - '0');
	if (i == 0)
		return false;
	if (ps == 52) {
		*why = TTYFILTER_DROP_CLIPBOARD;
		return false;
	}
	if (ps >= 10 && ps <= 19)
		return all_query(s + i, n - i);
	if (ps == 4) {
		/* 4;INDEX;?[;INDEX;?...] */
		size_t k = i;
		if (k >= n)
			return false;
		while (k < n) {
			size_t d;
			if (s[k++] != ';')
				return false;
			for (d = 0; k < n && s[k] >= '0' && s[k] <= '9'; k++, d++)
				;
			if (d == 0 || k + 1 >= n || s[k] != ';' || s[k + 1] != '?')
				return false;
			k += 2;
		}
		return true;
	}
	if (ps == 104 || (ps >= 110 && ps <= 119)) {
		for (; i < n; i++)
			if (s[i] != ';' && (s[i] < '0' || s[i] > '9'))
				return false;
		return true;
	}
	return false;
}

/* The OSC in seq is complete, ended by BEL or by ST (ESC \). */
static size_t osc_end(struct ttyfilter *f, char *out, bool st)
{
	enum ttyfilter_drop why;
	size_t n = 0;

	/* an overlong OSC is still classified by its start: clipboard writes are long */
	if (!osc_allowed(f->seq, f->seq_len, &why) || f->seq_bad) {
		drop(f, f->seq_bad && why != TTYFILTER_DROP_CLIPBOARD ? TTYFILTER_DROP_OVERLONG : why);
		return 0;
	}
	out[n++] = ESC;
	out[n++] = ']';
	memcpy(out + n, f->seq, f->seq_len);
	n += f->seq_len;
	if (st) {
		out[n++] = ESC;
		out[n++] = '\\';
	} else {
		out[n++] = BEL;
	}
	f->seq_len = 0;
	f->state = ST_GROUND;
	return n;
}

/* One byte in the ground state. Return: bytes written. */
static size_t ground(struct ttyfilter *f, unsigned char c, char *out)
{
	if (c < 0x80) {
		f->utf8_left = 0;
		if (c == ESC) {
			start_esc(f);
			return 0;
		}
		out[0] = (char)c;
		return 1;
	}
	if (c < 0xc0) {
		if (f->utf8_left) {
			f->utf8_left--;
			out[0] = (char)c;
			return 1;
		}
		if (c < 0xa0) { /* a raw C1 control (8-bit CSI, OSC, DCS ...) */
			f->dropped[TTYFILTER_DROP_C1]++;
			return 0;
		}
		out[0] = (char)c; /* a stray continuation: the terminal shows U+FFFD */
		return 1;
	}
	if (c == 0xc2) {
		f->utf8_left = 0;
		f->state = ST_UTF8_C2;
		return 0;
	}
	f->utf8_left = c >= 0xc3 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
	out[0] = (char)c;
	return 1;
}

/* C0 controls inside an escape or control sequence: CAN and SUB cancel it, ESC starts a new
 * one, the others are executed at once by the terminal (so passed on), DEL is ignored.
 * Return: true when @c was handled here. */
static bool in_seq_control(struct ttyfilter *f, unsigned char c, char *out, size_t *n)
{
	if (c == CAN || c == SUB) {
		f->seq_len = 0;
		f->seq_bad = false;
		f->state = ST_GROUND;
		return true;
	}
	if (c == ESC) {
		start_esc(f);
		return true;
	}
	if (c < 0x20) {
		out[(*n)++] = (char)c;
		return true;
	}
	return c == DEL;
}

/* Stage: ground, the fast path. Should: copy 8 bytes of printable ASCII at a time, else text,
 * C0 controls and UTF-8 byte by byte without a branch on the byte's class (stray C1 bytes
 * dropped); stop at ESC or 0xC2, which ground() hands to the state machine. Mustn't: branch
 * per byte class (measured: 4x slower on random bytes, 42-63 MB/s; bench/pty.sh times the
 * whole relay). Consumes bytes from in[*i] on; returns the bytes written to @out. */
static inline __attribute__((always_inline)) size_t ground_run(struct ttyfilter *f, const char *in, size_t len, size_t *pi, char *out)
{
	size_t i = *pi, n = 0;
	unsigned char c = (unsigned char)in[i];
	unsigned left = f->utf8_left;
	uint64_t c1 = 0;

	for (;;) {
		unsigned k;
		bool cont, keep;

		if (len - i >= 8 && printable8(in + i)) {
			memcpy(out + n, in + i, 8);
			n += 8;
			i += 8;
			left = 0;
			if (i == len)
				break;
			c = (unsigned char)in[i];
			continue;
		}
		k = byte_class[c];
		if (k == BC_SLOW)
			break;
		cont = k == BC_CONT_C1 || k == BC_CONT;
		keep = !(k == BC_CONT_C1 && left == 0);
		out[n] = (char)c;
		n += keep;
		c1 += !keep;
		left = cont ? left - (left != 0) : k - BC_LEAD0;
		if (++i == len)
			break;
		c = (unsigned char)in[i];
	}
	f->utf8_left = (uint8_t)left;
	f->dropped[TTYFILTER_DROP_C1] += c1;
	if (i < len)
		n += ground(f, c, out + n);
	*pi = i;
	return n;
}

/* Stage: after 0xC2. Should: drop C2 80..9F (U+0080..U+009F, the C1 controls in UTF-8) and
 * pass every other character whole. Mustn't: emit the held 0xC2 before its second byte is
 * known. Return: bytes written. */
static inline __attribute__((always_inline)) size_t utf8_c2(struct ttyfilter *f, unsigned char c, char *out)
{
	size_t n = 0;

	f->state = ST_GROUND;
	if (c >= 0x80 && c <= 0x9f) {
		f->dropped[TTYFILTER_DROP_C1]++;
		return 0;
	}
	out[n++] = (char)0xc2;
	if (c >= 0xa0 && c <= 0xbf) {
		out[n++] = (char)c;
		return n;
	}
	return n + ground(f, c, out + n); /* an invalid C2: the terminal shows U+FFFD */
}

/* Stage: after ESC. Should: pick the sequence (CSI, OSC, a string, an escape with
 * intermediates) or pass a complete two-byte escape of esc_final_allowed(). Mustn't: let a lone ST (ESC \) through,
 * which could seem to end a string in the middle of the output. Return: bytes written. */
static inline __attribute__((always_inline)) size_t esc(struct ttyfilter *f, unsigned char c, char *out)
{
	size_t n = 0;

	if (c == '[') {
		push(f, (char)c);
		f->state = ST_CSI;
	} else if (c == ']') {
		f->seq_len = 0;
		f->state = ST_OSC;
	} else if (c == 'P' || c == 'X' || c == '^' || c == '_') {
		f->seq_len = 0;
		f->state = ST_STR;
	} else if (c >= 0x20 && c <= 0x2f) {
		push(f, (char)c);
		f->state = ST_ESC_INTER;
	} else if (c == '\\') {
		f->seq_len = 0; /* a lone ST ends nothing: left out, so no string can */
		f->state = ST_GROUND; /* seem to end in the middle of the output */
	} else if (c >= 0x30 && c <= 0x7e) {
		if (esc_final_allowed((char)c))
			n += emit_seq(f, out, (char)c);
		else
			drop(f, TTYFILTER_DROP_ESC);
	} else if (!in_seq_control(f, c, out, &n) && c >= 0x80) {
		f->seq_len = 0; /* not a sequence: the ESC goes, the byte is text */
		f->state = ST_GROUND;
		n += ground(f, c, out + n);
	}
	return n;
}

/* Stage: an escape's intermediates. Should: pass a complete, short escape sequence that
 * esc_inter_allowed() accepts. Mustn't: pass ESC % (it selects the coding system: ESC % @
 * leaves UTF-8, after which the bytes of UTF-8 text could act as C1 controls). Return: bytes
 * written. */
static inline __attribute__((always_inline)) size_t esc_inter(struct ttyfilter *f, unsigned char c, char *out)
{
	size_t n = 0;

	if (c >= 0x20 && c <= 0x2f) {
		push(f, (char)c);
		if (f->seq_len > 5)
			f->seq_bad = true;
	} else if (c >= 0x30 && c <= 0x7e) {
		if (f->seq_bad)
			drop(f, TTYFILTER_DROP_OVERLONG);
		else if (!esc_inter_allowed(f->seq, f->seq_len, (char)c))
			drop(f, TTYFILTER_DROP_ESC);
		else
			n += emit_seq(f, out, (char)c);
	} else if (!in_seq_control(f, c, out, &n) && c >= 0x80) {
		drop(f, TTYFILTER_DROP_ESC);
		n += ground(f, c, out + n);
	}
	return n;
}

/* Stage: a CSI's parameters and intermediates. Should: pass a complete CSI that
 * csi_allowed() accepts (an allowlist), with at most CSI_PARAMS_MAX parameter bytes. Mustn't: pass one with
 * a parameter after an intermediate (the terminal ignores it: ST_CSI_IGNORE). Return: bytes
 * written. */
static inline __attribute__((always_inline)) size_t csi(struct ttyfilter *f, unsigned char c, char *out)
{
	size_t n = 0;

	if (c >= 0x30 && c <= 0x3f) {
		if (f->state == ST_CSI_INTER) {
			f->state = ST_CSI_IGNORE; /* a parameter after an intermediate */
			return 0;
		}
		push(f, (char)c);
		if (f->seq_len > CSI_PARAMS_MAX)
			f->seq_bad = true;
	} else if (c >= 0x20 && c <= 0x2f) {
		push(f, (char)c);
		f->state = ST_CSI_INTER;
		if (f->seq_len > CSI_PARAMS_MAX)
			f->seq_bad = true;
	} else if (c >= 0x40 && c <= 0x7e) {
		if (f->seq_bad)
			drop(f, TTYFILTER_DROP_OVERLONG);
		else if (!csi_allowed(f, (char)c))
			drop(f, TTYFILTER_DROP_CSI);
		else
			n += emit_seq(f, out, (char)c);
	} else if (!in_seq_control(f, c, out, &n) && c >= 0x80) {
		drop(f, TTYFILTER_DROP_CSI);
		n += ground(f, c, out + n);
	}
	return n;
}

/* Stage: a CSI the terminal ignores. Should: swallow it to its final byte. Mustn't: emit any
 * of it. Return: bytes written (C0 controls, or text after a cancelling high byte). */
static inline __attribute__((always_inline)) size_t csi_ignore(struct ttyfilter *f, unsigned char c, char *out)
{
	size_t n = 0;

	if (c >= 0x40 && c <= 0x7e)
		drop(f, TTYFILTER_DROP_CSI);
	else if (!in_seq_control(f, c, out, &n) && c >= 0x80) {
		drop(f, TTYFILTER_DROP_CSI);
		n += ground(f, c, out + n);
	}
	return n;
}

/* Stage: an OSC's payload and its terminator. Should: hold the payload (UTF-8 titles too) and
 * judge it whole at BEL or ST (osc_end()). Mustn't: emit any of it before it is judged; an ESC
 * that is not ST ends the string (the terminal would dispatch it: it never saw it) and begins
 * a new sequence with this byte. Return: bytes written. */
static inline __attribute__((always_inline)) size_t osc(struct ttyfilter *f, unsigned char c, char *out)
{
	if (f->state == ST_OSC_ESC) {
		enum ttyfilter_drop why;

		if (c == '\\')
			return osc_end(f, out, true);
		(void)osc_allowed(f->seq, f->seq_len, &why);
		drop(f, why);
		start_esc(f);
		return esc(f, c, out);
	}
	if (c == BEL)
		return osc_end(f, out, false);
	if (c == ESC)
		f->state = ST_OSC_ESC;
	else if (c == CAN || c == SUB)
		drop(f, TTYFILTER_DROP_OSC);
	else
		push(f, (char)c); /* anything else, UTF-8 titles too; checked at the end */
	return 0;
}

/* Stage: a DCS, SOS, PM or APC string. Should: swallow it to its ST, CAN or SUB, counted once.
 * Mustn't: emit any of it; an ESC that is not ST begins a new sequence with this byte.
 * Return: bytes written. */
static inline __attribute__((always_inline)) size_t str(struct ttyfilter *f, unsigned char c, char *out)
{
	if (f->state == ST_STR) {
		if (c == ESC)
			f->state = ST_STR_ESC;
		else if (c == CAN || c == SUB)
			drop(f, TTYFILTER_DROP_STRING);
		return 0;
	}
	drop(f, TTYFILTER_DROP_STRING);
	if (c == '\\')
		return 0;
	start_esc(f);
	return esc(f, c, out);
}

/* One state per stage function above, inlined (always_inline) so that the loop compiles as the
 * single switch it was before the split (measured with cachegrind over 16 KiB buffers: the
 * split without it ran 1.2% (text), 4.6% (SGR and UTF-8) and 2.4% (random bytes) more
 * instructions than the one-function filter; with it 1.2%, 1.5% and 2.3%). */
size_t ttyfilter_feed(struct ttyfilter *f, const char *in, size_t len, char *out)
{
	size_t n = 0;

	if (f->passthrough) {
		memcpy(out, in, len);
		return len;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		switch ((enum state)f->state) {
		case ST_GROUND:
			n += ground_run(f, in, len, &i, out + n);
			break;
		case ST_UTF8_C2:
			n += utf8_c2(f, c, out + n);
			break;
		case ST_ESC:
			n += esc(f, c, out + n);
			break;
		case ST_ESC_INTER:
			n += esc_inter(f, c, out + n);
			break;
		case ST_CSI:
		case ST_CSI_INTER:
			n += csi(f, c, out + n);
			break;
		case ST_CSI_IGNORE:
			n += csi_ignore(f, c, out + n);
			break;
		case ST_OSC:
		case ST_OSC_ESC:
			n += osc(f, c, out + n);
			break;
		case ST_STR:
		case ST_STR_ESC:
			n += str(f, c, out + n);
			break;
		}
	}
	return n;
}
