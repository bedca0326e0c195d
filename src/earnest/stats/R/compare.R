# Paired comparisons of earnest: two conditions (two models, or two prompts) answering the same items,
# correct ~ condition + (1 | template) + (1 | item), bootstrapped over templates with the draws of
# glmm.R (earnest_template_rows, earnest_draw: the same seed draws the same templates). A template
# drawn twice is two clusters and its items are distinct items in each copy.
#
# Data: a data.frame with columns template (int), item (int code), variant (1 = condition a,
# 0 = condition b), succ, fail (one answer per row). Records are those of glmm.R's bootstrap
# (earnest_record with GLMM 1's terms: "variant" is the condition's log odds ratio).

earnest_compare_formula <- cbind(succ, fail) ~ variant + (1 | cluster) + (1 | itemc)
# agq > 1: item intercepts alone (items are nested in templates, so they carry the template's
# level too; the template clustering is the bootstrap's), fitted by adaptive Gauss-Hermite
# quadrature with agq points. lme4's Laplace approximation shrinks the condition's log OR towards 0
# when each item has two 0/1 answers (about 7% in power_validity.py); quadrature does not.
earnest_compare_formula_agq <- cbind(succ, fail) ~ variant + (1 | itemc)

earnest_compare_fit <- function(d, rows, agq = 1L) {
  take <- unlist(rows, use.names = FALSE)
  r <- d[take, , drop = FALSE]
  r$cluster <- factor(rep.int(seq_along(rows), lengths(rows)))
  r$itemc <- factor(paste(r$cluster, r$item, sep = ":"))
  res <- if (agq > 1L) {
    earnest_capture(glmer(earnest_compare_formula_agq, data = r, family = binomial, nAGQ = agq))
  } else {
    earnest_capture(glmer(earnest_compare_formula, data = r, family = binomial))
  }
  fit <- res$value
  if (is.null(fit)) return(earnest_no_fit(1L, res$warnings, res$error))
  # as earnest_fit: lme4's convergence messages are also raised as warnings; keep each text once.
  # Except "boundary (singular) fit": with two 0/1 answers per item the item variance's ML estimate
  # is 0 in many resamples (about 30% at 20 templates x 5 items in power_validity.py), a valid fit of
  # the model, and dropping those resamples would bias the bootstrap distribution (the estimate is
  # smaller when the item variance is 0). It stays in lme4_messages and the singular flag, so the
  # reference rule (clean_mask, fidelity "reference") still drops them.
  conv <- as.character(fit@optinfo$conv$lme4$messages)
  boundary <- startsWith(conv, "boundary (singular) fit")
  warns <- as.character(unique(c(res$warnings, conv[!boundary], unlist(fit@optinfo$warnings))))
  # the random-effect variance recorded: the template intercept's, or the item intercept's (agq)
  vc <- VarCorr(fit)
  earnest_outcome(fixef(fit)[earnest_terms(1L)], if (agq > 1L) vc$itemc[1, 1] else vc$cluster[1, 1], isSingular(fit),
                  warns, res$error, conv)
}

earnest_compare_bootstrap <- function(d, resamples, seeds, cores = 1L, agq = 1L) {
  index <- earnest_template_rows(d)
  one <- function(k) {
    out <- earnest_compare_fit(d, earnest_draw(index, seeds[k]), agq)
    earnest_record(out, 1L, resamples[k], seeds[k])
  }
  ks <- seq_along(resamples)
  parts <- if (cores <= 1L || length(ks) <= 1L) lapply(ks, one)
           else earnest_claim_apply(ks, function(k) one(k), min(cores, length(ks)))
  do.call(rbind, parts)
}
