/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ttyfilter.h — what the sandbox's pty may send to the host terminal.
 *
 * The sandbox owns the cells of the screen, not the terminal around them. The relay passes text
 * and, from allowlists of CSI and ESC sequences, the control sequences that draw (SGR colours,
 * cursor movement, erasing, scrolling regions, modes such as the alternate screen, mouse and
 * bracketed paste, key encodings, the queries TUIs make whose answers are the terminal's own
 * state: DA, DSR, DECRQM, XTVERSION, colour queries) and drops every other sequence, among them
 * the requests whose answers read the screen or the host back (DECRQCRA, `CSI ... * y`, a
 * checksum of a screen rectangle) and what reaches outside the screen: OSC 52 (clipboard writes, and reads
 * that would hand the host clipboard to the sandbox), window titles and the title report (OSC
 * 0/1/2, CSI 20/21 t), hyperlinks (OSC 8), notifications, working-directory and shell-integration
 * marks, fonts, colour *changes*, every DCS/SOS/PM/APC string (tmux passthrough, sixel, kitty
 * graphics, XTGETTCAP), window moves and resizes (CSI t), printer control (CSI i), charset-mode
 * switches that could take the terminal out of UTF-8 (ESC %), and C1 controls in either encoding.
 * The full table is in docs/threat-model.md ("Terminal"). `--tty-passthrough` turns it off.
 *
 * The filter is a pure streaming state machine: a sequence split across reads is held (at most
 * TTYFILTER_HOLD_MAX bytes) until it is complete, then passed whole or dropped whole, so the
 * terminal only ever sees complete sequences that were checked, and plain text between them.
 * It assumes a terminal that decodes UTF-8 (every current emulator's default).
 */
#ifndef AISB_NS_TTYFILTER_H
#define AISB_NS_TTYFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest sequence the filter buffers; longer ones are dropped whole. */
#define TTYFILTER_SEQ_MAX 512
/* Output may exceed the input of one call by this much (what earlier calls held back). */
#define TTYFILTER_HOLD_MAX (TTYFILTER_SEQ_MAX + 8)

enum ttyfilter_drop {
	TTYFILTER_DROP_CLIPBOARD, /* OSC 52 */
	TTYFILTER_DROP_OSC,       /* any other OSC outside the safe set */
	TTYFILTER_DROP_STRING,    /* DCS, SOS, PM, APC */
	TTYFILTER_DROP_CSI,       /* window ops, title report, printer */
	TTYFILTER_DROP_ESC,       /* ESC % charset-mode switches */
	TTYFILTER_DROP_C1,        /* 8-bit and UTF-8 encoded C1 controls */
	TTYFILTER_DROP_OVERLONG,  /* sequences over TTYFILTER_SEQ_MAX */
	TTYFILTER_DROP_MAX,
};

struct ttyfilter {
	bool passthrough;
	uint8_t state;
	uint8_t utf8_left;   /* continuation bytes still expected */
	uint8_t str_kind;    /* which string a STR state swallows */
	bool seq_bad;        /* the sequence being read will be dropped */
	size_t seq_len;
	char seq[TTYFILTER_SEQ_MAX];
	uint64_t dropped[TTYFILTER_DROP_MAX];
};

/* Initialises @f; @passthrough relays everything unchanged. Does not log. */
void ttyfilter_init(struct ttyfilter *f, bool passthrough);

/* Filters @n bytes of @in into @out, which must hold @n + TTYFILTER_HOLD_MAX bytes.
 * Return: the number of bytes written to @out. Pure, does not log. */
size_t ttyfilter_feed(struct ttyfilter *f, const char *in, size_t n, char *out);

/* Sum of all dropped sequences. Pure. */
uint64_t ttyfilter_dropped(const struct ttyfilter *f);

#endif
