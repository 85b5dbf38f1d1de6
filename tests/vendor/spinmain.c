/* spinmain.c: the program for libspin.so (spinlib.c), its DT_NEEDED dependency: threads
 * of libspin's constructor have been calling an SSL_* function of the -Bsymbolic copy since
 * before main. main lets them make SPIN_MORE further calls (after any entry patch made at
 * start, so they go through whatever the patch left), stops them and exits 0. Threads that
 * do not advance within 20 s (a hang, never expected) are reported and the exit code is 1.
 * The output is the same on every run. */
#include <sched.h>
#include <stdio.h>
#include <time.h>

#define SPIN_MORE 20000

long spin_count(void);
long spin_stop(void);

int main(void)
{
    struct timespec t0, t;
    long want = spin_count() + SPIN_MORE;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (spin_count() < want) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 20) {
            printf("spinmain: the constructor's threads stopped calling the copy\n");
            return 1;
        }
        sched_yield();
    }
    spin_stop();
    printf("spinmain: the constructor's threads called the copy before and after main\n");
    return 0;
}
