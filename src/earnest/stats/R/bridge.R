# How earnest's Python side calls R (rbridge.guarded): f(...), with an interruption turned into an
# error that says so. R interrupts itself on SIGINT while it waits in select(), as
# parallel::mclapply's parent does for its workers (R_SelectEx installs its own SIGINT handler),
# and then no Python signal handler runs; a plain error would reach Python without a message.
# mclapply's own cleanup (SIGTERM to its workers) runs as the stack unwinds to this handler.
earnest_interruptible <- function(f, ...) {
  tryCatch(f(...), interrupt = function(c) stop("earnest-interrupted: R was interrupted (SIGINT)", call. = FALSE))
}
