#define _GNU_SOURCE
#include "CBenchBaseline.h"
#include <sched.h>
#include <unistd.h>

int cbb_run_on_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu >= 0) {
        CPU_SET(cpu, &set);
    } else if (sched_getaffinity(getpid(), sizeof set, &set) != 0) {
        return -1;
    }
    return sched_setaffinity(0, sizeof set, &set);
}
