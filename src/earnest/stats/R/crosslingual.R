# The cross-lingual GLMM of earnest (earnest.stats.crosslingual): binomial-logit
#   cbind(succ, fail) ~ variant * language + random intercepts
# with random = "template" (1 | cluster), "template_language" (1 | cluster:language) or "both"
# (1 | cluster) + (1 | cluster:language), where a cluster is one draw of a template. Data: one row per
# template x language x variant (succ, fail). Resample b draws the templates as GLMM 1's bootstrap
# does (set.seed(seed, "Mersenne-Twister", "Inversion", "Rejection"); sample.int(n, n, TRUE) over the
# sorted template ids), each drawn template bringing its rows in every language.

earnest_cross_formula <- function(random) {
  switch(random,
    template = cbind(succ, fail) ~ variant * language + (1 | cluster),
    template_language = cbind(succ, fail) ~ variant * language + (1 | cluster:language),
    both = cbind(succ, fail) ~ variant * language + (1 | cluster) + (1 | cluster:language),
    stop(sprintf("unknown random effects '%s'", random)))
}

earnest_cross_bootstrap <- function(d, languages, random, resamples, seeds, full = FALSE, prior_sd = NULL) {
  d$language <- factor(d$language, levels = languages)
  tmpl <- sort(unique(d$template))
  rows_of <- split(seq_len(nrow(d)), factor(d$template, levels = tmpl))
  f <- earnest_cross_formula(random)
  out <- vector("list", length(seeds))
  for (k in seq_along(seeds)) {
    if (full) {
      take <- rows_of
    } else {
      set.seed(seeds[k], kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")
      take <- rows_of[sample.int(length(tmpl), length(tmpl), replace = TRUE)]
    }
    rd <- d[unlist(take, use.names = FALSE), , drop = FALSE]
    rd$cluster <- factor(rep.int(seq_along(take), lengths(take)))
    res <- if (is.null(prior_sd)) {
      earnest_capture(glmer(f, data = rd, family = binomial))
    } else {
      # earnest mode's penalised fit (R/glmm.R's earnest_fit): the prior's covariance as a value in the call
      suppressWarnings(suppressPackageStartupMessages(library(blme)))
      V <- diag(as.numeric(prior_sd)^2, length(prior_sd))
      earnest_capture(eval(bquote(blme::bglmer(f, data = rd, family = binomial, fixef.prior = normal(cov = .(V)),
                                               cov.prior = NULL))))
    }
    fit <- res$value
    warns <- res$warnings
    terms <- NULL
    if (!is.null(fit)) {
      warns <- unique(c(warns, as.character(fit@optinfo$conv$lme4$messages), unlist(fit@optinfo$warnings)))
      cm <- coef(summary(fit))
      terms <- rownames(cm)
      vc <- as.data.frame(VarCorr(fit))
      out[[k]] <- data.frame(resample = resamples[k], seed = seeds[k], term = terms, estimate = unname(cm[, 1]),
                             se = unname(cm[, 2]), z = unname(cm[, 3]), p = unname(cm[, 4]),
                             ranef_var = sum(vc$vcov), converged = length(warns) == 0,
                             singular = isSingular(fit), messages = paste(warns, collapse = " | "),
                             lme4_messages = paste(as.character(fit@optinfo$conv$lme4$messages), collapse = " | "),
                             error = "", stringsAsFactors = FALSE)
    } else {
      out[[k]] <- data.frame(resample = resamples[k], seed = seeds[k], term = "(Intercept)", estimate = NA_real_,
                             se = NA_real_, z = NA_real_, p = NA_real_, ranef_var = NA_real_, converged = FALSE,
                             singular = NA, messages = paste(warns, collapse = " | "), lme4_messages = "",
                             error = res$error, stringsAsFactors = FALSE)
    }
  }
  do.call(rbind, out)
}
