/* dlopenloop.c: N dlopen/dlclose pairs of a library the process has already (what some programs
 * do to look a library up): what tlsmeter's dlopen adds when nothing is loaded. Benchmark only.
 *   dlopenloop N NAME */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: dlopenloop N NAME\n");
        return 2;
    }
    int n = atoi(argv[1]);
    for (int i = 0; i < n; i++) {
        void *h = dlopen(argv[2], RTLD_NOW);
        if (!h) {
            fprintf(stderr, "dlopenloop: %s\n", dlerror());
            return 1;
        }
        dlclose(h);
    }
    return 0;
}
