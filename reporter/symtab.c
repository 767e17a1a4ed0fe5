// SPDX-License-Identifier: MIT
/*
 * reporter/symtab.c - naming a frame of the running process for the exit
 * report: dladdr() for the object, its .symtab for the function.
 *
 * dladdr() knows only exported symbols, so a program's static functions
 * (and main, unless linked with -rdynamic) would show as offsets.  The
 * object's own symbol table names them.  This runs at exit, where the
 * process's malloc must not be called either, so the file is mapped and
 * its symbols scanned in place, with no table built: the report names a
 * few hundred frames at most.  The last objects mapped are kept for the
 * next frames (most frames of a report are in a few objects).  The
 * offline report (alloy report) does this properly, with file and line.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define CACHED 4

static struct {
	pthread_mutex_t lock;
	struct mapped {
		char path[ALLOY_CONF_PATH_MAX];
		const unsigned char *map;
		size_t len;
		unsigned long last; /* use stamp, for eviction */
	} m[CACHED];
	unsigned long clock;
} T = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool in_file(const struct mapped *f, uint64_t off, uint64_t len)
{
	return off <= f->len && len <= f->len - off;
}

/* The object at path, mapped (cached); NULL when it cannot be read. */
static const struct mapped *object(const char *path)
{
	struct mapped *f = &T.m[0];
	struct stat st;
	int fd;

	for (int i = 0; i < CACHED; i++) {
		if (T.m[i].map && !strcmp(T.m[i].path, path)) {
			T.m[i].last = ++T.clock;
			return &T.m[i];
		}
		if (T.m[i].last < f->last)
			f = &T.m[i];
	}
	if (f->map)
		munmap((void *)f->map, f->len);
	f->map = NULL;
	if (strlen(path) >= sizeof(f->path))
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) &&
	    st.st_size >= (off_t)sizeof(Elf64_Ehdr)) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
			       fd, 0);

		if (p != MAP_FAILED) {
			f->map = p;
			f->len = (size_t)st.st_size;
		}
	}
	close(fd);
	if (!f->map)
		return NULL;
	memcpy(f->path, path, strlen(path) + 1);
	f->last = ++T.clock;
	return f;
}

/* The function of f's .symtab that covers vaddr, and its start. */
static const char *scan(const struct mapped *f, uint64_t vaddr, uint64_t *start)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->map;
	const Elf64_Shdr *sh;
	const char *best = NULL;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(*sh)))
		return NULL;
	sh = (const Elf64_Shdr *)(f->map + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *tab = &sh[i], *str;
		const Elf64_Sym *sym;

		if (tab->sh_type != SHT_SYMTAB || tab->sh_link >= eh->e_shnum ||
		    tab->sh_entsize != sizeof(*sym) ||
		    !in_file(f, tab->sh_offset, tab->sh_size))
			continue;
		str = &sh[tab->sh_link];
		if (!in_file(f, str->sh_offset, str->sh_size))
			continue;
		sym = (const Elf64_Sym *)(f->map + tab->sh_offset);
		for (size_t k = 0; k < tab->sh_size / sizeof(*sym); k++) {
			const Elf64_Sym *y = &sym[k];

			if (ELF64_ST_TYPE(y->st_info) != STT_FUNC ||
			    !y->st_value || y->st_name >= str->sh_size ||
			    vaddr < y->st_value ||
			    vaddr >=
				    y->st_value + (y->st_size ? y->st_size : 1))
				continue;
			best = (const char *)f->map + str->sh_offset +
			       y->st_name;
			*start = y->st_value;
			if (!memchr(best, '\0', str->sh_size - y->st_name))
				best = NULL;
			else
				break;
		}
	}
	return best;
}

const char *alloy__rep_frame_str(uintptr_t frame, char *buf, size_t len)
{
	struct link_map *lm = NULL;
	const struct mapped *f;
	const char *obj, *name = NULL;
	uint64_t start = 0;
	Dl_info info;

	if (frame == REP_FRAME_MORE) {
		snprintf(buf, len, "... (more frames)");
		return buf;
	}
	if (alloy__rep_frame_interp(frame)) {
		struct alloy_reporter_frame_info fi;

		if (alloy__rep_frame_describe(frame, &fi) || !fi.function)
			snprintf(buf, len, "(interpreted frame)");
		else
			snprintf(buf, len, "%s (%s:%u)", fi.function,
				 fi.file ? fi.file : "?", fi.line);
		return buf;
	}
	/* A return address: look one byte back, in the call. */
	if (!dladdr1((void *)(frame - 1), &info, (void **)&lm,
		     RTLD_DL_LINKMAP) ||
	    !info.dli_fname || !lm) {
		snprintf(buf, len, "%#llx", (unsigned long long)frame);
		return buf;
	}
	obj = strrchr(info.dli_fname, '/');
	obj = obj ? obj + 1 : info.dli_fname;
	pthread_mutex_lock(&T.lock);
	/* The main program's dli_fname is its argv[0]: read it by /proc. */
	f = object(info.dli_fname[0] == '/' ? info.dli_fname
					    : "/proc/self/exe");
	if (f)
		name = scan(f, frame - 1 - lm->l_addr, &start);
	if (name) {
		snprintf(buf, len, "%s+%#llx (%s)", name,
			 (unsigned long long)(frame - lm->l_addr - start), obj);
		name = buf;
	}
	pthread_mutex_unlock(&T.lock);
	if (name)
		return buf;
	if (info.dli_sname && info.dli_saddr)
		snprintf(
			buf, len, "%s+%#llx (%s)", info.dli_sname,
			(unsigned long long)(frame - (uintptr_t)info.dli_saddr),
			obj);
	else /* The link-time address, what addr2line -e OBJ takes. */
		snprintf(buf, len, "%s+%#llx", obj,
			 (unsigned long long)(frame - lm->l_addr));
	return buf;
}
