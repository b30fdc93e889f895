/* SPDX-License-Identifier: MIT */
/* File paths as users write them in configs and on the command line. */
#ifndef MX_PATH_H
#define MX_PATH_H

/* Expand a leading "~/" (or a lone "~") with $HOME, else the passwd entry's
 * home; any other path is copied. Returns a new string (caller frees). */
char *mx_path_expand(const char *path);

#endif
