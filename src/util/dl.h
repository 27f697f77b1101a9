/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dl.h — libraries that only pulls, unpacks, builds and --net allow need, loaded with dlopen().
 *
 * A library on aisb's link line is loaded and relocated, with all its dependencies, on every
 * start, used or not. Measured (hyperfine -N, an empty program linked with -z now): 3.2 ms
 * alone, 20.7 ms with -lcurl, 11.3 ms with -larchive (it drags in libxml2, ICU and libstdc++),
 * 7.5 ms with -lcrypto; libmnl + libnftnl 15 page faults (/usr/bin/time %R: 69 -> 84). A plain
 * `aisb run` needs none of them, so they are loaded here instead, when needed.
 *
 * A library is described by a struct dl_lib: its soname, the Debian package that ships it (for
 * the error message and `aisb doctor`) and a table of symbol names with the slots that receive
 * their addresses. dl_load() fills every slot or none. Callers reach the functions through
 * dl-archive.c, dl-crypto.c, dl-mnl.c and dl-nftnl.c (stubs with the library's own names, so call
 * sites use the library's headers unchanged) or rootfs/curl-dl.h (macros, since
 * curl_easy_setopt() is variadic). Not thread-safe: the libraries are loaded from the main
 * thread only.
 *
 * Load a library only while the process sees the host's root. After pivot_root into a sandbox,
 * dlopen() would map whatever the sandbox's root (an image) holds under that name, into a process
 * that may still hold capabilities. So libmnl and libnftnl, which init needs after pivot_root
 * (--net allow), are "explicit": their stubs never load, and the supervisor loads them before it
 * clones init (the mappings are inherited).
 */
#ifndef AISB_UTIL_DL_H
#define AISB_UTIL_DL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dl_sym {
	const char *name; /* "archive_read_new" */
	void **slot;      /* where its address goes (a function pointer, POSIX dlsym() style) */
};

struct dl_lib {
	const char *soname;         /* "libarchive.so.13" */
	const char *package;        /* "libarchive13": what `apt-get install` needs */
	const char *purpose;        /* "to unpack image layers": why aisb wants it */
	const struct dl_sym *syms;
	size_t n_syms;
	/* state, owned by dl.c */
	int state;                  /* 0 not tried, 1 loaded, -1 failed */
	char error[256];            /* why it failed, for the log line and doctor */
};

/* The optional libraries, in the order `aisb doctor` reports them. */
extern struct dl_lib dl_libcurl, dl_libarchive, dl_libcrypto, dl_libmnl, dl_libnftnl, dl_libcap;
/* the tlsgate's only (net/tlsgate.h): libssl, and the part of libcrypto it needs besides hashing */
extern struct dl_lib dl_libssl, dl_libx509;

/**
 * dl_open() - load @lib and resolve all its symbols, once
 * @lib: the library; later calls return the first outcome
 *
 * Return: 0, or -ELIBACC with @lib->error saying why. Does not log.
 */
int dl_open(struct dl_lib *lib);

/**
 * dl_load() - dl_open() that reports a failure
 * @lib: the library
 *
 * The first failure is logged as one line naming the soname, what aisb needs it for, the loader's
 * reason and the package to install. Return: 0 or -ELIBACC. Logs on failure (the first time).
 */
int dl_load(struct dl_lib *lib);

/*
 * Declaring what we dlopen: every struct dl_lib is defined together with a systemd-style
 * ".note.dlopen" ELF note (https://systemd.io/ELF_DLOPEN_METADATA: owner "FDO", type 0x407c0c0a,
 * a 4-byte aligned JSON array of {feature, description, priority, soname[]}), from the same
 * macro arguments, so packagers and `readelf -p .note.dlopen aisb` see the optional libraries
 * and they cannot drift from what dl_open() loads. debian/dlopen-deps turns the notes into the
 * package's Depends (priority "required") and Recommends ("recommended"). @why must not hold a
 * double quote or a backslash (it is pasted into JSON as it is).
 */
#define DL_NOTE_TYPE 0x407c0c0aU
#define DL_NOTE_JSON(feature, so, why, prio)                                                       \
	"[{\"feature\":\"" feature "\",\"description\":\"" why "\",\"priority\":\"" prio        \
	"\",\"soname\":[\"" so "\"]}]"
#define DL_NOTE(var, feature, so, why, prio)                                                       \
	__attribute__((used, section(".note.dlopen"), aligned(4))) static const struct {          \
		uint32_t namesz, descsz, type;                                                     \
		char owner[4];                                                                     \
		char json[(sizeof(DL_NOTE_JSON(feature, so, why, prio)) + 3) & ~(size_t)3];        \
	} var = { 4, sizeof(DL_NOTE_JSON(feature, so, why, prio)), DL_NOTE_TYPE, "FDO",           \
		  DL_NOTE_JSON(feature, so, why, prio) }

/* Defines struct dl_lib @lib over @symtab and its note. @feature is a short name ("archive"),
 * @prio "required", "recommended" or "suggested". */
#define DL_DEFINE_LIB(lib, so, pkg, why, feature, prio, symtab)                                    \
	DL_NOTE(lib##_note, feature, so, why, prio);                                               \
	struct dl_lib lib = { .soname = (so), .package = (pkg), .purpose = (why),                  \
			      .syms = (symtab), .n_syms = sizeof(symtab) / sizeof((symtab)[0]) }

/*
 * Stubs from a table. A table is a macro T(F, V) listing F(return type, name, parameters,
 * arguments, value returned when the library is missing) and V(name, parameters, arguments) for
 * functions returning void (see dl-archive.c). DL_DEFINE_STUBS(T, lib, soname, package, purpose,
 * lazy, feature, priority) defines struct dl_lib @lib and its note (DL_DEFINE_LIB) and, for each function, a static pointer and a stub with the
 * library's own name that calls through; with @lazy the stub loads the library on first use,
 * without it the stub only returns the "missing" value until dl_load() was called.
 */
#define DL_POINTER(ret, name, params, args, missing) static ret(*dl_p_##name) params;
#define DL_POINTER_V(name, params, args) static void(*dl_p_##name) params;
#define DL_SYM(ret, name, params, args, missing) { #name, (void **)&dl_p_##name },
#define DL_SYM_V(name, params, args) { #name, (void **)&dl_p_##name },
#define DL_STUB(ret, name, params, args, missing)                                                  \
	ret name params                                                                            \
	{                                                                                          \
		return dl_ready() ? dl_p_##name args : (missing);                                  \
	}
#define DL_STUB_V(name, params, args)                                                              \
	void name params                                                                           \
	{                                                                                          \
		if (dl_ready())                                                                    \
			dl_p_##name args;                                                          \
	}
#define DL_DEFINE_STUBS(table, lib, so, pkg, why, lazy, feature, prio)                            \
	table(DL_POINTER, DL_POINTER_V)                                                            \
	static const struct dl_sym dl_syms[] = { table(DL_SYM, DL_SYM_V) };                        \
	DL_DEFINE_LIB(lib, so, pkg, why, feature, prio, dl_syms);                                  \
	static inline bool dl_ready(void)                                                          \
	{                                                                                          \
		return (lib).state > 0 || ((lazy) && dl_load(&(lib)) == 0);                        \
	}                                                                                          \
	table(DL_STUB, DL_STUB_V)

#endif
