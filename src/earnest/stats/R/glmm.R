# GLMM engine of earnest: binomial-logit GLMMs with a random intercept per template, fitted with
# lme4::glmer, one full-data (Wald) fit or a bootstrap over templates.
#
# Data arrive as a data.frame with columns template (int), variant (0/1), succ, fail and, for
# GLMM 2, gamma_c. Rows are either single answers (succ + fail = 1) or answers aggregated over
# identical (template, variant[, gamma_c]); both give the same likelihood up to a constant, so the
# same estimates, and aggregation makes GLMM 1 fits several times faster.

suppressWarnings(suppressPackageStartupMessages(library(lme4)))

earnest_terms <- function(glmm) {
  if (glmm == 1L) c("(Intercept)", "variant") else c("(Intercept)", "variant", "gamma_c")
}

earnest_formula <- function(glmm) {
  if (glmm == 1L) cbind(succ, fail) ~ variant + (1 | cluster)
  else cbind(succ, fail) ~ variant + gamma_c + (1 | cluster)
}

# Evaluate `expr`, catching every warning and message instead of printing it. Returns the value
# (NULL on error), the warnings raised and the error text (NA when there was none).
earnest_capture <- function(expr) {
  warns <- character(0)
  err <- NA_character_
  value <- tryCatch(
    withCallingHandlers(
      expr,
      warning = function(w) {
        warns <<- c(warns, conditionMessage(w))
        invokeRestart("muffleWarning")
      },
      # "boundary (singular) fit" arrives as a message; isSingular() reports it instead
      message = function(m) invokeRestart("muffleMessage")
    ),
    error = function(e) {
      err <<- conditionMessage(e)
      NULL
    }
  )
  list(value = value, warnings = warns, error = err)
}

# Fit one GLMM with glmer(). Returns the fit (or NULL), the warnings raised while fitting together
# with lme4's own convergence messages, those messages alone (fit@optinfo$conv$lme4$messages: what
# the paper authors' code reads to call a fit non-convergent; a singular fit's "boundary (singular)
# fit" is one of them) and the error text.
# prior_sd: NULL (glmer, the paper's fit) or the normal prior's standard deviation per fixed effect,
# intercept first (earnest mode's penalised fit: blme::bglmer with fixef.prior = normal(sd), no prior on
# the random-intercept variance, so its objective is glmer's deviance + sum((beta / sd)^2) + a constant).
# formula: another formula than the GLMM's (the profile likelihood's, with an offset)
earnest_fit <- function(d, glmm, control = glmerControl(), prior_sd = NULL, formula = earnest_formula(glmm)) {
  res <- if (is.null(prior_sd)) {
    earnest_capture(glmer(formula, data = d, family = binomial, control = control))
  } else {
    suppressWarnings(suppressPackageStartupMessages(library(blme)))
    # the prior's covariance as a value in the call: blme evaluates the prior's expression in an
    # environment of its own, where a variable of this function is not found (or is another object)
    V <- diag(as.numeric(prior_sd)^2, length(prior_sd))
    earnest_capture(eval(bquote(blme::bglmer(formula, data = d, family = binomial, control = control,
                                             fixef.prior = normal(cov = .(V)), cov.prior = NULL))))
  }
  fit <- res$value
  warns <- res$warnings
  conv <- character(0)
  if (!is.null(fit)) {
    conv <- as.character(fit@optinfo$conv$lme4$messages)
    # checkConv's messages are also raised as warnings; keep each text once
    warns <- unique(c(warns, conv, unlist(fit@optinfo$warnings)))
  }
  list(fit = fit, warnings = as.character(warns), conv_messages = conv, error = res$error)
}

# What the bootstrap keeps of a fit: estimates of the terms (NA for a failed fit or a dropped
# column), random-intercept variance, singular flag, warnings, lme4's own convergence messages
# (a subset of the warnings) and error.
earnest_outcome <- function(est, rv, singular, warnings, error, conv_messages = character(0)) {
  list(estimate = as.numeric(unname(est)), ranef_var = as.numeric(rv), singular = singular,
       warnings = as.character(warnings), conv_messages = as.character(conv_messages),
       error = as.character(error))
}

# The outcome of a fit that failed: no estimates, only its warnings and error.
earnest_no_fit <- function(glmm, warnings, error) {
  earnest_outcome(rep(NA_real_, length(earnest_terms(glmm))), NA_real_, NA, warnings, error)
}

earnest_fit_outcome <- function(res, glmm) {
  fit <- res$fit
  if (is.null(fit)) return(earnest_no_fit(glmm, res$warnings, res$error))
  earnest_outcome(fixef(fit)[earnest_terms(glmm)], VarCorr(fit)$cluster[1, 1], isSingular(fit),
                  res$warnings, res$error, res$conv_messages)
}

# lme4's convergence criterion: the largest of min(|scaled gradient|, |gradient|) over the
# parameters, compared with the tolerance of check.conv.grad.
earnest_max_grad <- function(fit) {
  derivs <- fit@optinfo$derivs
  if (is.null(derivs)) return(NA_real_)
  scgrad <- tryCatch(with(derivs, solve(chol(Hessian), gradient)), error = function(e) derivs$gradient)
  max(pmin(abs(scgrad), abs(derivs$gradient)))
}

# A fit is clean when it raised no error and no warning. `res` has warnings and error (NA if none).
earnest_clean <- function(res) is.na(res$error) && length(res$warnings) == 0L

earnest_error_text <- function(res) ifelse(is.na(res$error), "", res$error)

# One resample's record: one row per term. A failed fit gives NA estimates and the error text.
earnest_record <- function(out, glmm, resample, seed) {
  terms <- earnest_terms(glmm)
  n <- length(terms)
  data.frame(
    resample = rep(as.integer(resample), n),
    seed = rep(as.integer(seed), n),
    term = terms,
    estimate = out$estimate,
    ranef_var = rep(out$ranef_var, n),
    converged = rep(earnest_clean(out), n),
    singular = rep(out$singular, n),
    messages = rep(paste(out$warnings, collapse = " | "), n),
    lme4_messages = rep(paste(out$conv_messages, collapse = " | "), n),
    error = rep(earnest_error_text(out), n),
    stringsAsFactors = FALSE
  )
}

# Rows of template t, for every template, looked up once per shard.
earnest_template_rows <- function(d) {
  templates <- sort(unique(d$template))
  list(templates = templates, rows = split(seq_len(nrow(d)), factor(d$template, levels = templates)))
}

# The templates of one bootstrap resample, drawn with replacement from its own seed: the rows of
# each draw, in draw order.
earnest_draw <- function(index, seed) {
  set.seed(seed, kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")
  n <- length(index$templates)
  index$rows[sample.int(n, n, replace = TRUE)]
}

# The cluster factor of one bootstrap resample (`rows`: the rows of each draw, in draw order, named by
# template): each draw becomes its own cluster, so a template drawn twice is two clusters.
# labels "draw": cluster k is the k-th draw, levels in draw order. labels "reference": as the paper
# authors' bootstrap (results_analyser/glmm.py bootstrap_fit_df) relabels them, the string
# "<template id>_<k>" with k the 0-based draw position; glmer makes the factor of those strings, so
# the levels come in R's sort order of strings (the session's collation) rather than in draw order.
# Same clusters, same model: only the order of the random effects' columns (and so of lme4's sums)
# differs, which can change a fit at the edge of lme4's convergence checks.
earnest_cluster <- function(rows, labels = "draw") {
  n <- lengths(rows)
  if (identical(labels, "reference")) {
    return(factor(rep.int(sprintf("%s_%d", names(rows), seq_along(rows) - 1L), n)))
  }
  factor(rep.int(seq_along(rows), n))
}

# The data of one bootstrap resample, one cluster per draw (earnest_cluster).
earnest_resample <- function(d, index, seed, labels = "draw") {
  rows <- earnest_draw(index, seed)
  out <- d[unlist(rows, use.names = FALSE), , drop = FALSE]
  out$cluster <- earnest_cluster(rows, labels)
  out
}

# The bootstrap's fast path. For a small fit glmer() spends a good part of its time parsing the
# formula and building model frames, yet every resample's rows are rows of the full data. So the
# model frame and the fixed-effect matrix are built once per shard (earnest_design) and each
# resample subsets them; earnest_design_fit then takes the steps glmer() takes with lme4's own
# functions and arguments (glFormula's checks on the resample, the nAGQ = 0 stage, the Laplace
# stage, checkConv), so estimates, warnings and errors are those of glmer(). earnest_bootstrap
# checks that on the first resample it fits for each GLMM in an R session (a shard's job is one
# session) and, if they differ (an lme4 whose glmer() takes other steps), refits with glmer() and
# keeps using it.
earnest_design <- function(d, glmm, control = glmerControl()) {
  d$cluster <- factor(d$template)
  f <- earnest_formula(glmm)
  fr <- model.frame(lme4::subbars(f), data = d, drop.unused.levels = TRUE)
  list(fr = fr, X = model.matrix(lme4::nobars(f), fr), bars = lme4::findbars(f), family = binomial(),
       control = control, glmm = glmm, index = earnest_template_rows(d))
}

earnest_design_fit <- function(des, rows, labels = "draw") {
  control <- des$control
  chk <- control$checkControl
  res <- earnest_capture({
    take <- unlist(rows, use.names = FALSE)
    fr <- des$fr[take, , drop = FALSE]
    fr$cluster <- earnest_cluster(rows, labels)
    attr(fr, "terms") <- attr(des$fr, "terms")
    X <- des$X[take, , drop = FALSE]
    attr(X, "assign") <- attr(des$X, "assign")
    reTrms <- mkReTrms(des$bars, fr)
    n <- nrow(fr)
    lme4:::checkNlevels(reTrms$flist, n = n, chk, allow.n = TRUE)
    lme4:::checkZdims(reTrms$Ztlist, n = n, chk, allow.n = TRUE)
    lme4:::checkZrank(reTrms$Zt, n = n, chk, nonSmall = 1e6, allow.n = TRUE)
    X <- lme4:::chkRank.drop.cols(X, kind = chk$check.rankX, tol = 1e-7)
    X <- lme4:::checkScaleX(X, kind = chk$check.scaleX)
    devfun <- mkGlmerDevfun(fr, X, reTrms, des$family, verbose = 0L, control = control, nAGQ = 0L)
    opt <- optimizeGlmer(devfun, optimizer = control$optimizer[[1]], restart_edge = FALSE,
                         boundary.tol = 0, control = control$optCtrl, start = NULL, nAGQ = 0,
                         verbose = 0L, calc.derivs = FALSE)
    devfun <- updateGlmerDevfun(devfun, reTrms, nAGQ = 1L)
    opt <- optimizeGlmer(devfun, optimizer = control$optimizer[[2]],
                         restart_edge = control$restart_edge, boundary.tol = control$boundary.tol,
                         control = control$optCtrl, start = lme4:::updateStart(NULL, theta = opt$par),
                         nAGQ = 1L, verbose = 0L, stage = 2, calc.derivs = control$calc.derivs,
                         use.last.params = control$use.last.params)
    conv <- if (control$calc.derivs) {
      checkConv(attr(opt, "derivs"), opt$par, ctrl = control$checkConv,
                lbound = environment(devfun)$lower)
    }
    list(opt = opt, conv = conv, beta_names = colnames(X), theta_lower = reTrms$lower)
  })
  v <- res$value
  if (is.null(v)) return(earnest_no_fit(des$glmm, res$warnings, res$error))
  nth <- length(v$theta_lower)
  theta <- v$opt$par[seq_len(nth)]
  beta <- setNames(v$opt$par[-seq_len(nth)], v$beta_names)
  warns <- unique(c(res$warnings, v$conv$messages, unlist(attr(v$opt, "warnings"))))
  # as VarCorr() and isSingular() compute them for one random intercept and a binomial family
  earnest_outcome(beta[earnest_terms(des$glmm)], theta[1]^2, any(theta[v$theta_lower == 0] < 1e-4), warns,
                  res$error, as.character(v$conv$messages))
}

# lapply(ks, f, ...) over `cores` forked workers that share the work as they go: each worker takes
# the next k no worker has claimed yet (dir.create() is atomic, so a claim is a directory made
# once), until none is left. With resamples of unequal cost, or a core the machine slows for a
# while, no worker then sits idle while the other still has a queue, as with a split made up front.
# Results come back in the order of ks, whoever fitted them.
# A worker stops claiming once the process that forked it is gone (killed, by SIGTERM, SIGKILL or
# the out-of-memory killer, while the workers computed): an orphaned worker would otherwise go on
# fitting every resample left, on a node shared with others, for a result nobody reads.
earnest_claim_apply <- function(ks, f, cores, ...) {
  claims <- tempfile("earnest-claims-")
  dir.create(claims)
  on.exit(unlink(claims, recursive = TRUE), add = TRUE)
  parent <- Sys.getpid()
  worker <- function(w) {
    # a forked worker writes nothing to R's console: under rpy2 the console is a Python callback,
    # which a child of a threaded Python process must not enter (rbridge._guard)
    quiet <- file(nullfile(), open = "wt")
    sink(quiet)
    sink(quiet, type = "message")
    out <- list()
    for (k in ks) {
      # not return (mcexit would wait for its dead parent's leave to exit, asleep for ever)
      if (!earnest_parent_alive(parent)) tools::pskill(Sys.getpid(), tools::SIGKILL)
      if (dir.create(file.path(claims, k), showWarnings = FALSE)) out[[as.character(k)]] <- f(k, ...)
    }
    out
  }
  parts <- parallel::mclapply(seq_len(cores), worker, mc.cores = cores, mc.preschedule = TRUE)
  failed <- vapply(parts, function(p) inherits(p, "try-error") || !is.list(p), logical(1))
  if (any(failed)) {
    w <- which(failed)[1]
    bad <- parts[[w]]
    why <- if (is.null(bad)) "it died (killed, or out of memory?)"
           else if (!is.null(attr(bad, "condition"))) conditionMessage(attr(bad, "condition"))
           else paste(as.character(bad), collapse = " ")
    stop(sprintf("bootstrap worker %d of %d failed: %s", w, cores, why))
  }
  out <- do.call(c, unname(parts))[as.character(ks)]
  missing <- ks[vapply(out, is.null, logical(1))]
  if (length(missing)) stop(sprintf("bootstrap workers returned no result for %d of %d resamples", length(missing), length(ks)))
  unname(out)
}

# Whether the fast path gave glmer()'s outcome, per GLMM, once checked in this R session (the
# installed lme4 does not change while R runs).
earnest_fast_path_checked <- new.env()

# Whether this process's parent is still `parent`: read from /proc (Linux), where an orphan has
# been handed to another process; elsewhere, whether a process `parent` exists.
earnest_parent_alive <- function(parent) {
  stat <- tryCatch(readLines("/proc/self/stat", warn = FALSE), error = function(e) character(), warning = function(w) character())
  if (length(stat)) {
    # the command name, field 2, is in parentheses and may hold spaces; the parent is field 4
    after <- strsplit(sub("^.*\\) ", "", stat[1]), " ", fixed = TRUE)[[1]]
    return(identical(as.integer(after[2]), as.integer(parent)))
  }
  isTRUE(tools::pskill(parent, 0L))
}

# A shard of the bootstrap: resamples `resamples` with seeds `seeds` (same length), fitted in
# `cores` forked workers. The result does not depend on `cores` or on how resamples are split
# into shards, because each resample draws only from its own seed. `labels`: the clusters' labels and
# level order (earnest_cluster).
earnest_bootstrap <- function(d, glmm, resamples, seeds, cores = 1L, labels = "draw", prior_sd = NULL) {
  glmm <- as.integer(glmm)
  if (!labels %in% c("draw", "reference")) stop(sprintf("unknown cluster labels '%s' (draw or reference)", labels))
  key <- paste0("glmm", glmm)
  des <- earnest_design(d, glmm)
  by_glmer <- function(k) {
    earnest_fit_outcome(earnest_fit(earnest_resample(d, des$index, seeds[k], labels), glmm, prior_sd = prior_sd), glmm)
  }
  if (!is.null(prior_sd)) {
    # the penalised fit (earnest mode): bglmer on every resample, no fast path
    ks <- seq_along(resamples)
    one_b <- function(k) earnest_record(by_glmer(k), glmm, resamples[k], seeds[k])
    parts <- if (cores <= 1L || length(ks) <= 1L) lapply(ks, one_b) else earnest_claim_apply(ks, function(k) one_b(k), min(cores, length(ks)))
    out <- do.call(rbind, parts)
    out$path <- rep("bglmer", nrow(out))
    return(out)
  }
  by_design <- function(k) earnest_design_fit(des, earnest_draw(des$index, seeds[k]), labels)
  known <- earnest_fast_path_checked[[key]]
  # unless this session has checked it already, the first resample is also fitted by glmer()
  # (inside the parallel part, so it costs one fit on one core)
  check <- is.null(known)
  one <- function(k, fit, verify) {
    out <- fit(k)
    rec <- earnest_record(out, glmm, resamples[k], seeds[k])
    if (verify && k == 1L) attr(rec, "agrees") <- identical(out, by_glmer(1L))
    rec
  }
  run <- function(fit, verify = FALSE) {
    ks <- seq_along(resamples)
    if (cores <= 1L || length(ks) <= 1L) return(lapply(ks, one, fit = fit, verify = verify))
    earnest_claim_apply(ks, one, min(cores, length(ks)), fit = fit, verify = verify)
  }
  # `path` says which fitted each resample: "design" (the fast path) or "glmer" (the fallback)
  with_path <- function(parts, path) { out <- do.call(rbind, parts); out$path <- rep(path, nrow(out)); out }
  if (isFALSE(known)) return(with_path(run(by_glmer), "glmer"))
  parts <- run(by_design, verify = check)
  if (check) {
    agrees <- isTRUE(attr(parts[[1]], "agrees"))
    assign(key, agrees, envir = earnest_fast_path_checked)
    attr(parts[[1]], "agrees") <- NULL
    if (!agrees) {
      message("earnest: the bootstrap's fast path differs from glmer() with this lme4; refitting with glmer()")
      return(with_path(run(by_glmer), "glmer"))
    }
  }
  with_path(parts, "design")
}

# Resamples refitted with glmer() itself, to check another engine: with glmer's defaults
# (tol_pwrss = 0) or with the inner PIRLS iterated to a tighter relative tolerance.
earnest_check_fits <- function(d, glmm, resamples, seeds, tol_pwrss = 0, prior_sd = NULL) {
  glmm <- as.integer(glmm)
  control <- if (tol_pwrss > 0) glmerControl(tolPwrss = tol_pwrss) else glmerControl()
  index <- earnest_template_rows(d)
  do.call(rbind, lapply(seq_along(resamples), function(k) earnest_record(
    earnest_fit_outcome(earnest_fit(earnest_resample(d, index, seeds[k]), glmm, control, prior_sd = prior_sd), glmm),
    glmm, resamples[k], seeds[k])))
}

# The full-data fit: Wald statistics per term plus the fit's diagnostics.
earnest_wald <- function(d, glmm, control = glmerControl(), prior_sd = NULL) {
  glmm <- as.integer(glmm)
  d$cluster <- factor(d$template)
  res <- earnest_fit(d, glmm, control, prior_sd = prior_sd)
  terms <- earnest_terms(glmm)
  fit <- res$fit
  if (is.null(fit)) {
    coefs <- data.frame(term = terms, estimate = NA_real_, se = NA_real_, z = NA_real_, p = NA_real_)
    diag <- list(ranef_var = NA_real_, singular = NA, max_grad = NA_real_)
  } else {
    cm <- coef(summary(fit))
    coefs <- data.frame(term = terms, estimate = unname(cm[terms, 1]), se = unname(cm[terms, 2]),
                        z = unname(cm[terms, 3]), p = unname(cm[terms, 4]), stringsAsFactors = FALSE)
    diag <- list(ranef_var = as.numeric(VarCorr(fit)$cluster[1, 1]), singular = isSingular(fit),
                 max_grad = earnest_max_grad(fit))
  }
  tol <- control$checkConv$check.conv.grad$tol
  list(coefs = coefs,
       converged = earnest_clean(res),
       messages = res$warnings,
       lme4_messages = res$conv_messages,
       error = earnest_error_text(res),
       ranef_var = diag$ranef_var, singular = diag$singular,
       max_grad = diag$max_grad, tol = if (is.null(tol)) NA_real_ else tol)
}

# Listing 6 of the paper: the full-data fit again with every optimiser lme4 offers.
earnest_optimisers <- function() {
  list(
    bobyqa = glmerControl(optimizer = "bobyqa"),
    Nelder_Mead = glmerControl(optimizer = "Nelder_Mead"),
    nlminbwrap = glmerControl(optimizer = "nlminbwrap"),
    nloptwrap.NLOPT_LN_NELDERMEAD = glmerControl(optimizer = "nloptwrap",
                                                 optCtrl = list(algorithm = "NLOPT_LN_NELDERMEAD")),
    nloptwrap.NLOPT_LN_BOBYQA = glmerControl(optimizer = "nloptwrap",
                                             optCtrl = list(algorithm = "NLOPT_LN_BOBYQA"))
  )
}

earnest_refit_optimisers <- function(d, glmm) {
  glmm <- as.integer(glmm)
  d$cluster <- factor(d$template)
  controls <- earnest_optimisers()
  rows <- lapply(names(controls), function(name) {
    out <- earnest_fit_outcome(earnest_fit(d, glmm, controls[[name]]), glmm)
    data.frame(optimiser = name, term = earnest_terms(glmm), estimate = out$estimate,
               converged = earnest_clean(out), singular = out$singular,
               messages = paste(out$warnings, collapse = " | "),
               error = earnest_error_text(out), stringsAsFactors = FALSE)
  })
  do.call(rbind, rows)
}

# The profile likelihood's deviance: the Laplace deviance (-2 log-likelihood) of the GLMM with fixed
# effect `term` held at `value` (its column moved into an offset), plus the prior's sum((beta / sd)^2)
# over every fixed effect (the held one included) when prior_sd is given; `term` NA: the full fit's.
# Constants that do not depend on the parameters cancel in the differences taken (the likelihood-ratio
# statistic). NA when the fit fails.
earnest_fixed_deviance <- function(d, glmm, term = "", value = 0, prior_sd = NULL) {
  glmm <- as.integer(glmm)
  d$cluster <- factor(d$template)
  terms <- earnest_terms(glmm)
  sd <- if (is.null(prior_sd)) NULL else setNames(as.numeric(prior_sd), terms)
  if (is.na(term) || term == "") {
    form <- earnest_formula(glmm)
    keep <- terms
  } else {
    keep <- setdiff(terms, term)
    d$earnest_offset <- value * d[[term]]
    rhs <- c(if (length(keep) > 1L) keep[-1] else "1", "offset(earnest_offset)", "(1 | cluster)")
    form <- as.formula(paste("cbind(succ, fail) ~", paste(rhs, collapse = " + ")))
  }
  # blme 1.0-5 refuses a normal prior on a single fixed effect ("normal prior covariance of improper
  # length"): the intercept-only fit is glmer's, and the intercept's prior term is added at its optimum
  # (the penalised optimum moves the intercept by ~beta0 / (sd^2 * information): a deviance change
  # below 1e-4 at any design with a few hundred answers)
  one <- length(keep) == 1L
  res <- earnest_fit(d, glmm, prior_sd = if (is.null(sd) || one) NULL else unname(sd[keep]), formula = form)
  fit <- res$fit
  if (is.null(fit)) return(NA_real_)
  beta <- fixef(fit)
  dev <- -2 * as.numeric(lme4:::logLik.merMod(fit))
  if (!is.null(sd)) {
    dev <- dev + sum((beta / sd[names(beta)])^2)
    if (!is.na(term) && term != "") dev <- dev + (value / sd[[term]])^2
  }
  dev
}
