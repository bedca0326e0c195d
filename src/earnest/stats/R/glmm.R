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

# Fit one GLMM, catching every warning and message instead of printing it. Returns the fit (or
# NULL), the warnings raised while fitting, lme4's own convergence messages, and the error text.
earnest_fit <- function(d, glmm, control = glmerControl()) {
  warns <- character(0)
  err <- NA_character_
  fit <- tryCatch(
    withCallingHandlers(
      glmer(earnest_formula(glmm), data = d, family = binomial, control = control),
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
  if (!is.null(fit)) {
    # checkConv's messages are also raised as warnings; keep each text once
    warns <- unique(c(warns, fit@optinfo$conv$lme4$messages, unlist(fit@optinfo$warnings)))
  }
  list(fit = fit, warnings = as.character(warns), error = err)
}

# lme4's convergence criterion: the largest of min(|scaled gradient|, |gradient|) over the
# parameters, compared with the tolerance of check.conv.grad.
earnest_max_grad <- function(fit) {
  derivs <- fit@optinfo$derivs
  if (is.null(derivs)) return(NA_real_)
  scgrad <- tryCatch(with(derivs, solve(chol(Hessian), gradient)), error = function(e) derivs$gradient)
  max(pmin(abs(scgrad), abs(derivs$gradient)))
}

# One resample's record: one row per term. A failed fit gives NA estimates and the error text.
earnest_record <- function(res, glmm, resample, seed) {
  terms <- earnest_terms(glmm)
  fit <- res$fit
  if (is.null(fit)) {
    est <- rep(NA_real_, length(terms))
    rv <- NA_real_
    singular <- NA
  } else {
    est <- unname(fixef(fit)[terms])
    rv <- as.numeric(VarCorr(fit)$cluster[1, 1])
    singular <- isSingular(fit)
  }
  data.frame(
    resample = rep(as.integer(resample), length(terms)),
    seed = rep(as.integer(seed), length(terms)),
    term = terms,
    estimate = est,
    ranef_var = rep(rv, length(terms)),
    converged = rep(is.na(res$error) && length(res$warnings) == 0L, length(terms)),
    singular = rep(singular, length(terms)),
    messages = rep(paste(res$warnings, collapse = " | "), length(terms)),
    error = rep(ifelse(is.na(res$error), "", res$error), length(terms)),
    stringsAsFactors = FALSE
  )
}

# Rows of template t, for every template, looked up once per shard.
earnest_template_rows <- function(d) {
  templates <- sort(unique(d$template))
  list(templates = templates, rows = split(seq_len(nrow(d)), factor(d$template, levels = templates)))
}

# The data of one bootstrap resample: templates drawn with replacement; each draw becomes its own
# cluster, so a template drawn twice is two clusters.
earnest_resample <- function(d, index, seed) {
  set.seed(seed, kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")
  n <- length(index$templates)
  drawn <- sample.int(n, n, replace = TRUE)
  rows <- index$rows[drawn]
  out <- d[unlist(rows, use.names = FALSE), , drop = FALSE]
  out$cluster <- factor(rep.int(seq_len(n), lengths(rows)))
  out
}

# A shard of the bootstrap: resamples `resamples` with seeds `seeds` (same length), fitted in
# `cores` forked workers. The result does not depend on `cores` or on how resamples are split
# into shards, because each resample draws only from its own seed.
earnest_bootstrap <- function(d, glmm, resamples, seeds, cores = 1L) {
  glmm <- as.integer(glmm)
  index <- earnest_template_rows(d)
  one <- function(k) {
    bd <- earnest_resample(d, index, seeds[k])
    earnest_record(earnest_fit(bd, glmm), glmm, resamples[k], seeds[k])
  }
  ks <- seq_along(resamples)
  if (cores > 1L && length(ks) > 1L) {
    parts <- parallel::mclapply(ks, one, mc.cores = cores, mc.preschedule = TRUE)
    failed <- vapply(parts, function(p) inherits(p, "try-error") || !is.data.frame(p), logical(1))
    if (any(failed)) {
      first <- parts[[which(failed)[1]]]
      stop(sprintf("bootstrap worker failed on %d of %d resamples: %s", sum(failed), length(ks),
                   paste(as.character(first), collapse = " ")))
    }
  } else {
    parts <- lapply(ks, one)
  }
  do.call(rbind, parts)
}

# The full-data fit: Wald statistics per term plus the fit's diagnostics.
earnest_wald <- function(d, glmm, control = glmerControl()) {
  glmm <- as.integer(glmm)
  d$cluster <- factor(d$template)
  res <- earnest_fit(d, glmm, control)
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
       converged = is.na(res$error) && length(res$warnings) == 0L,
       messages = res$warnings,
       error = ifelse(is.na(res$error), "", res$error),
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
    res <- earnest_fit(d, glmm, controls[[name]])
    terms <- earnest_terms(glmm)
    est <- if (is.null(res$fit)) rep(NA_real_, length(terms)) else unname(fixef(res$fit)[terms])
    data.frame(optimiser = name, term = terms, estimate = est,
               converged = is.na(res$error) && length(res$warnings) == 0L,
               singular = if (is.null(res$fit)) NA else isSingular(res$fit),
               messages = paste(res$warnings, collapse = " | "),
               error = ifelse(is.na(res$error), "", res$error), stringsAsFactors = FALSE)
  })
  do.call(rbind, rows)
}
