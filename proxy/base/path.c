/* SPDX-License-Identifier: MIT */
/* Path expansion (path.h). */
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
