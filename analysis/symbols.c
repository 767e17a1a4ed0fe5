// SPDX-License-Identifier: MIT
/*
 * analysis/symbols.c - frames named from the files that held them.
 *
 * A frame is a return address; its object is the module (an "M" record)
 * that held it when its node was written.  The address minus the
 * module's start plus its file offset is a file offset, which the
 * object's program headers turn into the link-time address its symbol
 * tables and debug information use.  Functions come from .symtab (or
 * .dynsym when stripped, or the .symtab of a separate debug file found
 * by build id), C++ ones demangled; file and line from `addr2line`
 * (which demangles too), run once per object with all its addresses,
 * when the object or its debug file has debug information.  An object
 * that cannot be read leaves its frames as raw addresses and, unless
 * told to be quiet, one line on stderr.
 *
 * A frame no function covers is shown as MODULE+ADDRESS, ADDRESS being
 * the link-time one, so that `addr2line -e MODULE ADDRESS` finds it: an
 * executable linked at a fixed address (not PIE) runs at its link
 * address, so there nothing is subtracted, where a shared object or a
 * PIE loses its load address.  Only an object that cannot be read keeps
 * the file offset, the one thing the map says.
 *
 * Return addresses are looked up one byte back: the call instruction,
 * which may be the last of its function (a call to a noreturn function).
 * An interpreted frame (version 4) is named by the trace itself: its
 * function and file from a "c" record, its line from its node.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "symbols.h"

struct sym {
	uint64_t addr, size;
	const char *name;
	const char *shown; /* name demangled, once it was asked for */
};

struct elf_image {
	void *map;
	size_t len;
	const Elf64_Ehdr *eh;
};

/* One object file, read once however many segments name it. */
struct object {
	char *path;
	bool tried, ok, debug; /* debug: has .debug_line somewhere */
	struct elf_image img, dbg;
	char *dbg_path;
	struct sym *syms;
	size_t nsyms;
	const Elf64_Phdr *ph; /* of img */
	int phnum;
	/* Frames of this object to name, for addr2line. */
	uint32_t *todo;
	size_t ntodo, captodo;
};

struct symbols {
	const struct trace *tr;
	bool quiet;
	struct sym_frame *frames; /* by node id */
	bool *done;
	struct object *obj; /* by module index */
	size_t nobj;
	char **strings; /* owned names from addr2line */
	size_t nstrings, capstrings;
};

/* ---- ELF ------------------------------------------------------------ */

static bool in_image(const struct elf_image *im, uint64_t off, uint64_t len)
{
	return off <= im->len && len <= im->len - off;
}

static bool image_open(struct elf_image *im, const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	memset(im, 0, sizeof(*im));
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		errno = ENOEXEC;
		return false;
	}
	im->len = (size_t)st.st_size;
	im->map = mmap(NULL, im->len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (im->map == MAP_FAILED) {
		im->map = NULL;
		return false;
	}
	im->eh = im->map;
	if (memcmp(im->eh->e_ident, ELFMAG, SELFMAG) ||
	    im->eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    !in_image(im, im->eh->e_shoff,
		      (uint64_t)im->eh->e_shnum * sizeof(Elf64_Shdr)) ||
	    !in_image(im, im->eh->e_phoff,
		      (uint64_t)im->eh->e_phnum * sizeof(Elf64_Phdr)) ||
	    (im->eh->e_shnum && im->eh->e_shentsize != sizeof(Elf64_Shdr))) {
		munmap(im->map, im->len);
		memset(im, 0, sizeof(*im));
		errno = ENOEXEC;
		return false;
	}
	return true;
}

static void image_close(struct elf_image *im)
{
	if (im->map)
		munmap(im->map, im->len);
	memset(im, 0, sizeof(*im));
}

static const Elf64_Shdr *sections(const struct elf_image *im)
{
	return (const Elf64_Shdr *)((const char *)im->map + im->eh->e_shoff);
}

/* The section named name, or NULL. */
static const Elf64_Shdr *section(const struct elf_image *im, const char *name)
{
	const Elf64_Shdr *sh = sections(im);
	const Elf64_Shdr *names;
	size_t n = strlen(name) + 1;

	if (im->eh->e_shstrndx >= im->eh->e_shnum)
		return NULL;
	names = &sh[im->eh->e_shstrndx];
	for (int i = 0; i < im->eh->e_shnum; i++)
		if (sh[i].sh_name < names->sh_size &&
		    in_image(im, names->sh_offset + sh[i].sh_name, n) &&
		    !memcmp((const char *)im->map + names->sh_offset +
				    sh[i].sh_name,
			    name, n))
			return &sh[i];
	return NULL;
}

/* Function symbols of the table of type type into o->syms. */
static int read_symbols(struct object *o, const struct elf_image *im,
			uint32_t type)
{
	const Elf64_Shdr *sh = sections(im);

	for (int i = 0; i < im->eh->e_shnum; i++) {
		const Elf64_Shdr *tab = &sh[i], *str;
		size_t n;

		if (tab->sh_type != type || tab->sh_link >= im->eh->e_shnum ||
		    tab->sh_entsize != sizeof(Elf64_Sym) ||
		    !in_image(im, tab->sh_offset, tab->sh_size))
			continue;
		str = &sh[tab->sh_link];
		if (!in_image(im, str->sh_offset, str->sh_size))
			continue;
		n = tab->sh_size / sizeof(Elf64_Sym);
		for (size_t k = 0; k < n; k++) {
			const Elf64_Sym *y =
				(const Elf64_Sym *)((const char *)im->map +
						    tab->sh_offset) +
				k;
			int t = ELF64_ST_TYPE(y->st_info);
			const char *name;
			struct sym *ns;

			if ((t != STT_FUNC && t != STT_GNU_IFUNC) ||
			    y->st_shndx == SHN_UNDEF || !y->st_value ||
			    y->st_name >= str->sh_size)
				continue;
			name = (const char *)im->map + str->sh_offset +
			       y->st_name;
			if (!memchr(name, '\0', str->sh_size - y->st_name) ||
			    !*name)
				continue;
			if (!(o->nsyms & (o->nsyms + 1)) || !o->nsyms) {
				ns = realloc(o->syms,
					     (2 * o->nsyms + 2) * sizeof(*ns));
				if (!ns)
					return -ENOMEM;
				o->syms = ns;
			}
			o->syms[o->nsyms++] = (struct sym){
				.addr = y->st_value,
				.size = y->st_size,
				.name = name,
			};
		}
	}
	return 0;
}

static int by_addr(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Of aliases, the one with a size, then the shortest name. */
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	return (int)(strlen(x->name) - strlen(y->name));
}

/* im's GNU build id as hex into hex (41 bytes); false when it has none. */
static bool image_build_id(const struct elf_image *im, char *hex)
{
	const Elf64_Shdr *sh = section(im, ".note.gnu.build-id");
	const Elf64_Nhdr *nh;
	const unsigned char *id;

	hex[0] = '\0';
	if (!sh || !in_image(im, sh->sh_offset, sh->sh_size) ||
	    sh->sh_size < sizeof(*nh))
		return false;
	nh = (const Elf64_Nhdr *)((const char *)im->map + sh->sh_offset);
	if (nh->n_type != NT_GNU_BUILD_ID || nh->n_descsz < 2 ||
	    nh->n_descsz > 20 ||
	    sizeof(*nh) + ((nh->n_namesz + 3) & ~3u) + nh->n_descsz >
		    sh->sh_size)
		return false;
	id = (const unsigned char *)(nh + 1) + ((nh->n_namesz + 3) & ~3u);
	for (unsigned i = 0; i < nh->n_descsz; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	return true;
}

/* The separate debug file of an object, by build id, if there is one. */
static char *debug_file(const char *hex)
{
	char path[128];

	if (strlen(hex) < 4)
		return NULL;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug",
		 hex, hex + 2);
	return access(path, R_OK) ? NULL : strdup(path);
}

static void object_load(struct symbols *s, struct object *o,
			const struct trace_module *m)
{
	char hex[41];

	o->tried = true;
	if (!image_open(&o->img, o->path)) {
		if (!s->quiet)
			fprintf(stderr,
				"alloy report: %s: %s; its frames are shown as addresses\n",
				o->path, strerror(errno));
		return;
	}
	image_build_id(&o->img, hex);
	if (m->build_id[0] && strcmp(hex, m->build_id)) {
		if (!s->quiet)
			fprintf(stderr,
				"alloy report: %s is not the file the trace saw (its build id differs: rebuilt since?); "
				"its frames are shown as addresses\n",
				o->path);
		image_close(&o->img);
		return;
	}
	o->ok = true;
	o->ph = (const Elf64_Phdr *)((const char *)o->img.map +
				     o->img.eh->e_phoff);
	o->phnum = o->img.eh->e_phnum;
	o->debug = section(&o->img, ".debug_line") != NULL;
	o->dbg_path = debug_file(hex);
	if (o->dbg_path && image_open(&o->dbg, o->dbg_path))
		o->debug |= section(&o->dbg, ".debug_line") != NULL;
	read_symbols(o, &o->img, SHT_SYMTAB);
	if (!o->nsyms && o->dbg.map)
		read_symbols(o, &o->dbg, SHT_SYMTAB);
	if (!o->nsyms)
		read_symbols(o, &o->img, SHT_DYNSYM);
	qsort(o->syms, o->nsyms, sizeof(*o->syms), by_addr);
}

/* The link-time address of file offset off, or false. */
static bool vaddr_of(const struct object *o, uint64_t off, uint64_t *va)
{
	for (int i = 0; i < o->phnum; i++) {
		const Elf64_Phdr *ph = &o->ph[i];

		if (ph->p_type == PT_LOAD && off >= ph->p_offset &&
		    off - ph->p_offset < ph->p_filesz) {
			*va = off - ph->p_offset + ph->p_vaddr;
			return true;
		}
	}
	return false;
}

static struct sym *lookup(const struct object *o, uint64_t va)
{
	size_t lo = 0, hi = o->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->syms[mid].addr <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* The nearest symbol at or below; a sized one must cover va. */
	for (size_t i = lo; i-- > 0 && o->syms[i].addr == o->syms[lo - 1].addr;)
		if (!o->syms[i].size || va < o->syms[i].addr + o->syms[i].size)
			return &o->syms[i];
	return NULL;
}

/* ---- addr2line ------------------------------------------------------ */

static const char *addr2line_path(void)
{
	static const char *const dirs[] = { "/usr/bin/addr2line",
					    "/bin/addr2line",
					    "/usr/local/bin/addr2line" };
	const char *env = getenv("ALLOY_ADDR2LINE");

	if (env)
		return *env && !access(env, X_OK) ? env : NULL;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!access(dirs[i], X_OK))
			return dirs[i];
	return NULL;
}

static const char *keep(struct symbols *s, const char *text, size_t n)
{
	char *c;

	if (s->nstrings == s->capstrings) {
		size_t cap = s->capstrings ? 2 * s->capstrings : 256;
		char **ns = realloc(s->strings, cap * sizeof(*ns));

		if (!ns)
			return NULL;
		s->strings = ns;
		s->capstrings = cap;
	}
	c = strndup(text, n);
	if (c)
		s->strings[s->nstrings++] = c;
	return c;
}

#ifdef HAVE_CXA_DEMANGLE
/* libstdc++'s demangler, the C++ ABI's (declared here: this is C). */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);
#endif

/*
 * The name a report shows for symbol y: a C++ symbol demangled
 * ("cgraph_node::expand()", as addr2line -C gives where there is debug
 * information), any other as it is, and as it is when the demangler is
 * missing or refuses it.  Worked out once per symbol.
 */
static const char *shown_name(struct symbols *s, struct sym *y)
{
	if (!y)
		return NULL;
	if (y->shown)
		return y->shown;
	y->shown = y->name;
#ifdef HAVE_CXA_DEMANGLE
	if (!strncmp(y->name, "_Z", 2)) {
		int status = -1;
		char *d = __cxa_demangle(y->name, NULL, NULL, &status);
		const char *kept = d && !status ? keep(s, d, strlen(d)) : NULL;

		if (kept)
			y->shown = kept;
		free(d);
	}
#else
	(void)s;
#endif
	return y->shown;
}

/* "file.c:42 (discriminator 3)" into frame f. */
static void take_line(struct symbols *s, struct sym_frame *f, char *text)
{
	char *colon, *end;
	unsigned long line;

	text[strcspn(text, " \n")] = '\0';
	colon = strrchr(text, ':');
	if (!colon || text[0] == '?' || colon == text)
		return;
	line = strtoul(colon + 1, &end, 10);
	if (!line || *end)
		return;
	f->file = keep(s, text, (size_t)(colon - text));
	f->line = (unsigned)line;
}

/*
 * Run addr2line over the object's frames: addresses on its standard
 * input (a file, so it can never block).  With -i it names the functions
 * inlined at an address too, innermost first, and with -a it starts each
 * address's lines with the address: the frame is named after the last
 * of them, the function the address is really in, at the line of the
 * call there (what a site is to its reader; the symbol tables agree).
 */
static void run_addr2line(struct symbols *s, struct object *o,
			  const uint64_t *va)
{
	const char *tool = addr2line_path();
	char in[] = "/tmp/alloy-addr2line.XXXXXX";
	char line[4096], func[4096];
	int fd, pipefd[2];
	struct sym_frame *fr = NULL;
	size_t i = 0;
	pid_t pid;
	FILE *f;

	if (!tool || !o->ntodo)
		return;
	fd = mkstemp(in);
	if (fd < 0)
		return;
	unlink(in);
	f = fdopen(fd, "w+");
	if (!f) {
		close(fd);
		return;
	}
	for (size_t k = 0; k < o->ntodo; k++)
		fprintf(f, "%#llx\n", (unsigned long long)va[k]);
	if (fflush(f) || lseek(fd, 0, SEEK_SET) || pipe(pipefd)) {
		fclose(f);
		return;
	}
	pid = fork();
	if (pid == 0) {
		dup2(fd, 0);
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		execl(tool, tool, "-a", "-i", "-f", "-C", "-e",
		      o->dbg.map ? o->dbg_path : o->path, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	fclose(f);
	f = pid > 0 ? fdopen(pipefd[0], "r") : NULL;
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '0' && line[1] == 'x') {
			/* The next address: its frame. */
			fr = i < o->ntodo ? &s->frames[o->todo[i++]] : NULL;
			continue;
		}
		snprintf(func, sizeof(func), "%s", line);
		if (!fgets(line, sizeof(line), f) || !fr)
			break;
		/* Each pair replaces the last: the outermost one stays. */
		if (func[0] && strcmp(func, "??"))
			fr->func = keep(s, func, strlen(func));
		fr->file = NULL;
		fr->line = 0;
		take_line(s, fr, line);
	}
	if (f)
		fclose(f);
	else
		close(pipefd[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* ---- frames ---------------------------------------------------------- */

struct symbols *symbols_new(const struct trace *tr, bool quiet)
{
	struct symbols *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->tr = tr;
	s->quiet = quiet;
	s->frames = calloc(tr->nnodes + 1, sizeof(*s->frames));
	s->done = calloc(tr->nnodes + 1, sizeof(*s->done));
	s->obj = calloc(tr->nmodules + 1, sizeof(*s->obj));
	if (!s->frames || !s->done || !s->obj) {
		symbols_free(s);
		return NULL;
	}
	/* Segments of one file share an object (the newest path wins). */
	for (size_t i = 0; i < tr->nmodules; i++)
		s->obj[i].path = tr->modules[i].path;
	s->nobj = tr->nmodules;
	return s;
}

void symbols_free(struct symbols *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nobj; i++) {
		image_close(&s->obj[i].img);
		image_close(&s->obj[i].dbg);
		free(s->obj[i].dbg_path);
		free(s->obj[i].syms);
		free(s->obj[i].todo);
	}
	for (size_t i = 0; i < s->nstrings; i++)
		free(s->strings[i]);
	free(s->strings);
	free(s->obj);
	free(s->frames);
	free(s->done);
	free(s);
}

/* The object of module index m: the first segment of its file. */
static struct object *object_of(struct symbols *s, uint32_t m)
{
	for (size_t i = 0; i < m; i++)
		if (!strcmp(s->obj[i].path, s->obj[m].path))
			return &s->obj[i];
	return &s->obj[m];
}

static void queue(struct object *o, uint32_t id)
{
	if (o->ntodo == o->captodo) {
		size_t cap = o->captodo ? 2 * o->captodo : 64;
		uint32_t *n = realloc(o->todo, cap * sizeof(*n));

		if (!n)
			return;
		o->todo = n;
		o->captodo = cap;
	}
	o->todo[o->ntodo++] = id;
}

void symbols_resolve(struct symbols *s, const uint32_t *stacks, size_t n)
{
	const struct trace *tr = s->tr;

	for (size_t i = 0; i < n; i++) {
		for (uint32_t id = stacks[i];
		     trace_stack_known(id) && id < tr->nnodes && !s->done[id];
		     id = tr->nodes[id].parent) {
			const struct trace_node *nd = &tr->nodes[id];
			struct sym_frame *f = &s->frames[id];
			const struct trace_module *m;
			struct object *o;
			uint64_t va;

			s->done[id] = true;
			if (nd->code) { /* interpreted: named by the trace */
				const struct trace_code *c =
					nd->code < tr->ncodes
						? &tr->codes[nd->code]
						: NULL;

				f->func = c && c->function ? c->function : "?";
				f->file = c ? c->file : NULL;
				f->line = (unsigned)nd->frame;
				continue;
			}
			if (!nd->module || nd->frame <= 1)
				continue;
			m = &tr->modules[nd->module - 1];
			o = object_of(s, nd->module - 1);
			f->module = m->path;
			/* The file offset first: the map says only that. */
			f->addr = nd->frame - 1 - m->start + m->offset;
			if (!o->tried)
				object_load(s, o, m);
			if (!o->ok || !vaddr_of(o, f->addr, &va))
				continue;
			f->addr = va;
			f->linked = true;
			f->func = shown_name(s, lookup(o, va));
			if (o->debug)
				queue(o, id);
		}
	}
	for (size_t i = 0; i < s->nobj; i++) {
		struct object *o = &s->obj[i];
		uint64_t *va;

		if (!o->ntodo)
			continue;
		va = malloc(o->ntodo * sizeof(*va));
		for (size_t k = 0; va && k < o->ntodo; k++)
			va[k] = s->frames[o->todo[k]].addr;
		if (va)
			run_addr2line(s, o, va);
		free(va);
		o->ntodo = 0;
	}
}

const struct sym_frame *symbols_frame(struct symbols *s, uint32_t id)
{
	static const struct sym_frame none;

	if (!trace_stack_known(id) || id >= s->tr->nnodes)
		return &none;
	if (!s->done[id])
		symbols_resolve(s, &id, 1);
	return &s->frames[id];
}

static const char *base(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

const char *symbols_no_stack(uint32_t stack)
{
	return stack == TRACE_STACK_MISSING
		       ? "unknown (its stack is missing from the trace)"
		       : "unknown (no call stack recorded: backtrace:1)";
}

const char *symbols_func(struct symbols *s, uint32_t id, char *buf, size_t len)
{
	const struct sym_frame *f = symbols_frame(s, id);
	uint64_t frame;

	if (!trace_stack_known(id))
		return symbols_no_stack(id);
	frame = s->tr->nodes[id].frame;
	if (frame == 1 && !s->tr->nodes[id].code)
		snprintf(buf, len, "[more frames]");
	else if (f->func)
		snprintf(buf, len, "%s", f->func);
	else if (f->module) /* what differs first: cut, labels still do */
		snprintf(buf, len, "%#llx (%s)", (unsigned long long)f->addr,
			 base(f->module));
	else
		snprintf(buf, len, "%#llx", (unsigned long long)frame);
	return buf;
}

const char *symbols_name(struct symbols *s, uint32_t id, char *buf, size_t len)
{
	const struct sym_frame *f = symbols_frame(s, id);
	size_t n;

	if (trace_stack_known(id) && !f->func && f->module &&
	    s->tr->nodes[id].frame > 1) {
		snprintf(buf, len, "%s+%#llx", base(f->module),
			 (unsigned long long)f->addr);
		return buf;
	}
	symbols_func(s, id, buf, len);
	if (!trace_stack_known(id) || !f->func)
		return buf;
	n = strlen(buf);
	if (f->file)
		snprintf(buf + n, len - n, " (%s:%u)", base(f->file), f->line);
	else if (f->module)
		snprintf(buf + n, len - n, " (%s)", base(f->module));
	return buf;
}
