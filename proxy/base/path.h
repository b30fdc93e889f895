/* SPDX-License-Identifier: MIT */
/* File paths as users write them in configs and on the command line. */
#ifndef MX_PATH_H
#define MX_PATH_H

/* Expand a leading "~/" (or a lone "~") with $HOME, else the passwd entry's
 * home; any other path is copied. Returns a new string (caller frees). */
char *mx_path_expand(const char *path);

/*
 * |path| as a file of the directory |dir| names: "~/" expanded
 * (mx_path_expand), an absolute result kept, a relative one joined to |dir|
 * (its leading "./" dropped), or to the working directory when |dir| is
 * NULL. Returns a new string (caller frees): absolute unless the working
 * directory cannot be known.
 */
char *mx_path_resolve(const char *dir, const char *path);

/*
 * The absolute directory of the file |file| names, without symbolic links
 * when it exists (realpath), else as mx_path_resolve(NULL, ...) gives it.
 * Returns a new string (caller frees).
 */
char *mx_path_dir_of(const char *file);

/*
 * "$|var|/|rel|" for an XDG base directory variable (XDG_CONFIG_HOME,
 * XDG_STATE_HOME), or "|fallback|/|rel|" ("~/" expanded) when the variable
 * is unset, empty or relative, which the XDG Base Directory specification
 * says to ignore. Returns a new string (caller frees).
 */
char *mx_path_xdg(const char *var, const char *fallback, const char *rel);

#endif
