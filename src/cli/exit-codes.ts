// Exit statuses of `turnstile` besides 0 (README, "Command line"): 1 for failures that
// are not the input's fault (server unreachable ...), 2 for bad input (main.ts).

/** A seal refused because the table's backlog reached hardBacklog: retry later (EX_TEMPFAIL of sysexits.h). */
export const EXIT_OVER_BACKLOG = 75;
