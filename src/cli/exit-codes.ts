// Exit statuses of `turnstile` besides 0 (README, "Command line"): 1 for failures that
// are not the input's fault (server unreachable ...), 2 for bad input (main.ts). The codes
// below are outcomes a script may want to act on, so each has its own.

/** A seal refused because the table's backlog reached hardBacklog: retry later (EX_TEMPFAIL of sysexits.h). */
export const EXIT_OVER_BACKLOG = 75;

/** `wait-merged` gave up at its --timeout: nothing was wrong with the request (as timeout(1) exits). */
export const EXIT_TIMED_OUT = 124;
