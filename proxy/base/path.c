/* SPDX-License-Identifier: MIT */
/* Path expansion and resolution (path.h). */
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "path.h"
static const char *home_dir(void)
{
    const char *home = getenv("HOME");
    if (home && home[0])
        return home;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir && pw->pw_dir[0] ? pw->pw_dir : NULL;
}

char *mx_path_expand(const char *path)
{
    if (path[0] != '~' || (path[1] != '/' && path[1] != '\0'))
        return mx_xstrdup(path);
    const char *home = home_dir();
    if (home == NULL)
        return mx_xstrdup(path);
    size_t hl = strlen(home);
    while (hl > 1 && home[hl - 1] == '/')
        hl--;
    return mx_xasprintf("%.*s%s", (int)hl, home, path + 1);
}

/* "./a" is "a"; "." alone is the directory itself. */
static const char *skip_dot(const char *p)
{
    while (p[0] == '.' && p[1] == '/') {
        p += 2;
        while (*p == '/')
            p++;
    }
    return strcmp(p, ".") == 0 ? p + 1 : p;
}

static char *join(const char *dir, const char *rel)
{
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    rel = skip_dot(rel);
    if (rel[0] == '\0')
        return mx_xstrndup(dir, dl);
    return mx_xasprintf("%.*s%s%s", (int)dl, dir, dir[dl - 1] == '/' ? "" : "/", rel);
}

char *mx_path_resolve(const char *dir, const char *path)
{
    char *full = mx_path_expand(path);
    if (full[0] == '/')
        return full;
    char *cwd = NULL;
    if (dir == NULL) {
        cwd = getcwd(NULL, 0);
        if (cwd == NULL)
            return full;
        dir = cwd;
    }
    char *out = join(dir, full);
    free(cwd);
    free(full);
    return out;
}

char *mx_path_dir_of(const char *file)
{
    const char *slash = strrchr(file, '/');
    char *dir;
    if (slash == NULL)
        dir = mx_xstrdup(".");
    else if (slash == file)
        dir = mx_xstrdup("/");
    else
        dir = mx_xstrndup(file, (size_t)(slash - file));
    char *abs = mx_path_resolve(NULL, dir);
    free(dir);
    char *real = realpath(abs, NULL);
    if (real == NULL)
        return abs;
    free(abs);
    return real;
}

char *mx_path_xdg(const char *var, const char *fallback, const char *rel)
{
    const char *v = getenv(var);
    if (v && v[0] == '/')
        return join(v, rel);
    char *base = mx_path_expand(fallback);
    char *out = join(base, rel);
    free(base);
    return out;
}
