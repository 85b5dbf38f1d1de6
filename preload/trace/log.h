/* log.h: the preload's only voice: one stderr line per problem, never exit or abort. */
#ifndef TLSM_LOG_H
#define TLSM_LOG_H

#include <stdbool.h>
#include <stddef.h>

/* Remember which file stderr is (constructor), so a reused descriptor 2 is never written. */
void tlsm_log_init(void);
/* Print "tlsmeter: ..." to stderr with one write(2), unless TLSMETER_QUIET. */
void tlsm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The longest warning line, "tlsmeter: " and newline included. */
#define TLSM_WARN_MAX 1024
/* msg (room for cap bytes with the NUL) holds the start of a text of total bytes: when it did
 * not fit, cut it at a word boundary near the end (inside one long word: at a character
 * boundary) and end it with " [cut: N more bytes]". Returns its length. */
size_t tlsm_log_cut(char *msg, size_t cap, size_t total);

/* log_tree.c: one stderr line per distinct warning per process tree. Init (constructor):
 * takes TLSMETER_TREE out of the environment; writable false in secure-execution mode. */
void tlsm_log_tree_init(bool writable);
/* True when msg was not printed yet in this tree (or that cannot be known): print it. */
bool tlsm_log_tree_first(const char *msg);
/* The tree's root ending (exit, _exit): remove the tree's markers. */
void tlsm_log_tree_exit(void);
#define TLSM_EXEC_ENV_MAX 1024
struct tlsm_exec_env {
    char *v[TLSM_EXEC_ENV_MAX];
    char tree[80];
};
/* exec hooks: envp for a child, carrying the tree's token when the child is preloaded. */
char *const *tlsm_log_exec_env(char *const envp[], struct tlsm_exec_env *b);

#endif
