#[test]
fn density_known_values() {
    // Beta(1, 1) is uniform; Beta(2, 2) = 6x(1 − x); Beta(2, 1) = 2x.
    let uniform = BetaPosterior::new(1.0, 1.0);
    assert!((uniform.density(0.3) - 1.0).abs() < 1e-12);
    assert!((uniform.density(0.0) - 1.0).abs() < 1e-12);
    let b22 = BetaPosterior::new(2.0, 2.0);
    assert!((b22.density(0.5) - 1.5).abs() < 1e-12);
    assert!((b22.density(0.25) - 6.0 * 0.25 * 0.75).abs() < 1e-12);
    assert_eq!(b22.density(0.0), 0.0);
    let b21 = BetaPosterior::new(2.0, 1.0);
    assert!((b21.density(1.0) - 2.0).abs() < 1e-12);
    assert_eq!(b21.density(1.5), 0.0);
    // Large shapes: no overflow; integrates to 1 (midpoint rule).
    let big = BetaPosterior::new(4000.0, 1000.0);
    let n = 20_000;
    let integral: f64 = (0..n)
        .map(|k| big.density((k as f64 + 0.5) / n as f64) / n as f64)
        .sum();
    assert!((integral - 1.0).abs() < 1e-6, "{integral}");
}

#[test]
fn thompson_shares_known_cases() {
    let same = BetaPosterior::new(3.0, 5.0);
    let s = thompson_shares(&[same, same], 1000);
    assert!(
        (s[0] - 0.5).abs() < 1e-9 && (s[1] - 0.5).abs() < 1e-9,
        "{s:?}"
    );
    // Beta(2, 1) vs Beta(1, 1): P(X > Y) = ∫ 2x·x dx = 2/3.
    let s = thompson_shares(
        &[BetaPosterior::new(2.0, 1.0), BetaPosterior::new(1.0, 1.0)],
        1000,
    );
    assert!((s[0] - 2.0 / 3.0).abs() < 1e-4, "{s:?}");
    // Ten uniform posteriors: one tenth each.
    let s = thompson_shares(&[BetaPosterior::default(); 10], 1000);
    assert!(s.iter().all(|x| (x - 0.1).abs() < 1e-9));
    assert!(thompson_shares(&[], 10).is_empty());
    assert_eq!(thompson_shares(&[same], 0), vec![1.0]);
}

#[test]
fn thompson_shares_match_drawing() {
    // Three overlapping posteriors: the shares equal the frequencies of the highest draw.
    let posteriors = [
        BetaPosterior::new(8.0, 4.0),
        BetaPosterior::new(5.0, 3.0),
        BetaPosterior::new(2.0, 2.0),
    ];
    let shares = thompson_shares(&posteriors, 1000);
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let draws = 200_000;
    let mut wins = [0usize; 3];
    for _ in 0..draws {
        let x: Vec<f64> = posteriors.iter().map(|p| p.sample(&mut uniform)).collect();
        let best = (0..3).max_by(|a, b| x[*a].total_cmp(&x[*b])).unwrap();
        wins[best] += 1;
    }
    for i in 0..3 {
        let freq = wins[i] as f64 / draws as f64;
        // binomial standard error at 200k draws is below 0.0012
        assert!(
            (freq - shares[i]).abs() < 0.005,
            "{i}: {freq} vs {}",
            shares[i]
        );
    }
}

use super::*;

/// xorshift64* mapped to (0, 1): a small deterministic uniform source for the tests.
fn uniform_source(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed.max(1);
    move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let bits = state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        (bits as f64 + 0.5) / (1u64 << 53) as f64
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn posterior_from_counts_mean_and_variance() {
    let p = BetaPosterior::from_counts(FeedbackCounts::new(3.0, 1.0));
    assert_eq!(
        p,
        BetaPosterior {
            alpha: 4.0,
            beta: 2.0
        }
    );
    assert!(close(p.mean(), 4.0 / 6.0, 1e-15));
    // 4·2 / (6²·7) = 8/252
    assert!(close(p.variance(), 8.0 / 252.0, 1e-15));
    assert_eq!(BetaPosterior::default().mean(), 0.5);
}

#[test]
fn rewards_update_counts() {
    let c = FeedbackCounts::default()
        .with_reward(1)
        .with_reward(1)
        .with_reward(0)
        .with_reward(-1);
    assert_eq!(c, FeedbackCounts::new(2.0, 1.0));
    assert_eq!(c.total(), 3.0);
    assert_eq!(
        c.merged(FeedbackCounts::new(1.0, 4.0)),
        FeedbackCounts::new(3.0, 5.0)
    );
}

#[test]
fn ln_gamma_known_values() {
    assert!(close(ln_gamma(1.0), 0.0, 1e-14));
    assert!(close(ln_gamma(2.0), 0.0, 1e-14));
    assert!(close(ln_gamma(5.0), 24.0_f64.ln(), 1e-13));
    assert!(close(ln_gamma(10.0), 362_880.0_f64.ln(), 1e-12));
    // Γ(1/2) = √π, Γ(1/4) = 3.625609908221908…
    assert!(close(ln_gamma(0.5), 0.5 * PI.ln(), 1e-14));
    assert!(close(ln_gamma(0.25), 3.625_609_908_221_908_f64.ln(), 1e-13));
}

#[test]
fn incomplete_beta_closed_forms() {
    // I_x(1, 1) = x; I_x(2, 1) = x²; I_x(1, 3) = 1 − (1−x)³; I_x(4, 2) = 5x⁴ − 4x⁵.
    for &x in &[0.01, 0.3, 0.5, 0.8, 0.99] {
        assert!(
            close(regularized_incomplete_beta(1.0, 1.0, x), x, 1e-13),
            "x={x}"
        );
        assert!(
            close(regularized_incomplete_beta(2.0, 1.0, x), x * x, 1e-13),
            "x={x}"
        );
        let one_three = 1.0 - (1.0 - x) * (1.0 - x) * (1.0 - x);
        assert!(
            close(regularized_incomplete_beta(1.0, 3.0, x), one_three, 1e-13),
            "x={x}"
        );
    }
    assert!(close(
        regularized_incomplete_beta(4.0, 2.0, 0.3),
        0.030_78,
        1e-13
    ));
    assert!(close(
        regularized_incomplete_beta(4.0, 2.0, 0.8),
        0.737_28,
        1e-13
    ));
    // Symmetric distributions put half their mass below 1/2.
    for &a in &[0.5, 7.3, 501.0, 20_000.0] {
        assert!(
            close(regularized_incomplete_beta(a, a, 0.5), 0.5, 1e-10),
            "a={a}"
        );
    }
    assert_eq!(regularized_incomplete_beta(3.0, 2.0, 0.0), 0.0);
    assert_eq!(regularized_incomplete_beta(3.0, 2.0, 1.0), 1.0);
}

#[test]
fn quantiles_invert_closed_forms() {
    let uniform = BetaPosterior::new(1.0, 1.0);
    let (lo, hi) = uniform.credible_interval(0.9);
    assert!(close(lo, 0.05, 1e-10) && close(hi, 0.95, 1e-10));
    // Beta(2, 1): CDF x², so quantile √p.
    let (lo, hi) = BetaPosterior::new(2.0, 1.0).credible_interval(0.95);
    assert!(close(lo, 0.025_f64.sqrt(), 1e-10), "{lo}");
    assert!(close(hi, 0.975_f64.sqrt(), 1e-10), "{hi}");
    assert_eq!(uniform.quantile(0.0), 0.0);
    assert_eq!(uniform.quantile(1.0), 1.0);
}

#[test]
fn credible_interval_contains_mean_and_narrows_with_data() {
    let few = BetaPosterior::from_counts(FeedbackCounts::new(3.0, 1.0));
    let many = BetaPosterior::from_counts(FeedbackCounts::new(30.0, 10.0));
    let lots = BetaPosterior::from_counts(FeedbackCounts::new(300.0, 100.0));
    let mut previous_width = f64::INFINITY;
    for p in [few, many, lots] {
        let (lo, hi) = p.credible_interval(0.95);
        assert!(lo < p.mean() && p.mean() < hi, "{p:?}: ({lo}, {hi})");
        assert!(hi - lo < previous_width);
        previous_width = hi - lo;
    }
}

#[test]
fn large_counts_match_normal_approximation() {
    // Beta(1001, 3001): mean 0.25, sd = √(1001·3001 / (4002²·4003)).
    let p = BetaPosterior::new(1001.0, 3001.0);
    let mean = 1001.0 / 4002.0;
    let sd = (1001.0 * 3001.0 / (4002.0 * 4002.0 * 4003.0_f64)).sqrt();
    let (lo, hi) = p.credible_interval(0.95);
    assert!(close(lo, mean - 1.959_964 * sd, 1e-3), "{lo}");
    assert!(close(hi, mean + 1.959_964 * sd, 1e-3), "{hi}");
}

#[test]
fn thompson_draws_match_posterior_moments() {
    let mut uniform = uniform_source(0x9e37_79b9_7f4a_7c15);
    for (alpha, beta) in [
        (4.0, 2.0),
        (1.0, 1.0),
        (0.5, 0.5),
        (2.0, 30.0),
        (200.0, 100.0),
    ] {
        let p = BetaPosterior::new(alpha, beta);
        let n = 40_000;
        let draws: Vec<f64> = (0..n).map(|_| p.sample(&mut uniform)).collect();
        assert!(draws.iter().all(|&x| (0.0..=1.0).contains(&x)));
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        let true_mean = alpha / (alpha + beta);
        let true_var = alpha * beta / ((alpha + beta).powi(2) * (alpha + beta + 1.0));
        // Standard error of the mean is √(var/n) ≤ 0.0025 here; allow 4 of them.
        assert!(
            close(mean, true_mean, 4.0 * (true_var / n as f64).sqrt()),
            "{alpha},{beta}: {mean}"
        );
        assert!(
            close(var, true_var, 0.05 * true_var),
            "{alpha},{beta}: {var} vs {true_var}"
        );
    }
}

#[test]
fn thompson_draws_follow_the_cdf() {
    // The sampler and the CDF are independent code; the fraction of draws below each
    // quantile must match its probability.
    let mut uniform = uniform_source(42);
    let p = BetaPosterior::new(3.0, 7.0);
    let draws: Vec<f64> = (0..40_000).map(|_| p.sample(&mut uniform)).collect();
    for &q in &[0.1, 0.5, 0.9] {
        let x = p.quantile(q);
        let below = draws.iter().filter(|&&d| d <= x).count() as f64 / draws.len() as f64;
        assert!(close(below, q, 0.01), "q={q}: {below}");
    }
}

#[test]
fn sampling_is_deterministic_given_the_source() {
    let p = BetaPosterior::new(4.0, 2.0);
    let mut a = uniform_source(7);
    let mut b = uniform_source(7);
    for _ in 0..100 {
        assert_eq!(p.sample(&mut a), p.sample(&mut b));
    }
    // A degenerate source still yields a value in [0, 1].
    let mut constant = || 0.0;
    let x = p.sample(&mut constant);
    assert!((0.0..=1.0).contains(&x));
}

#[test]
fn discounting() {
    assert_eq!(discount_factor(0.5, 2.0), 0.25);
    assert_eq!(discount_factor(0.5, -3.0), 1.0);
    assert!(close(gamma_for_half_life(30.0).powf(30.0), 0.5, 1e-14));
    assert_eq!(
        FeedbackCounts::new(10.0, 4.0).scaled(0.25),
        FeedbackCounts::new(2.5, 1.0)
    );

    // γ = 0.5 per day: successes at days 0 and 1, a failure at day 2 → as of day 2
    // successes 0.25 + 0.5, failures 1.
    let in_order = DiscountedFeedback::new(0.0, 0.5)
        .observed(0.0, 1)
        .observed(1.0, 1)
        .observed(2.0, -1);
    let shuffled = DiscountedFeedback::new(0.0, 0.5)
        .observed(2.0, -1)
        .observed(0.0, 1)
        .observed(1.0, 1);
    for d in [in_order, shuffled] {
        assert_eq!(d.as_of, 2.0);
        assert!(close(d.counts.successes, 0.75, 1e-15));
        assert!(close(d.counts.failures, 1.0, 1e-15));
    }
    let later = in_order.advanced_to(4.0);
    assert!(close(later.counts.successes, 0.1875, 1e-15));
    assert!(close(later.counts.failures, 0.25, 1e-15));
    assert_eq!(in_order.advanced_to(1.0), in_order);
}

#[test]
fn shrinkage_prior() {
    let params = ShrinkageParams::default();
    // No population data: the base prior.
    assert_eq!(
        population_prior(FeedbackCounts::default(), &params),
        BetaPosterior::new(1.0, 1.0)
    );
    // Population 80/20, cap 10: μ = 81/102, prior Beta(1 + 810/102, 1 + 210/102).
    let prior = population_prior(FeedbackCounts::new(80.0, 20.0), &params);
    assert!(close(prior.alpha, 1.0 + 810.0 / 102.0, 1e-12));
    assert!(close(prior.beta, 1.0 + 210.0 / 102.0, 1e-12));
    assert!(close(prior.alpha + prior.beta, 12.0, 1e-12));
    // A small population counts fully (n < cap): 3/1 → μ = 4/6, prior Beta(1 + 8/3, 1 + 4/3).
    let small = population_prior(FeedbackCounts::new(3.0, 1.0), &params);
    assert!(close(small.alpha, 1.0 + 8.0 / 3.0, 1e-12));
    assert!(close(small.beta, 1.0 + 4.0 / 3.0, 1e-12));
    // A new user starts near the population; their own feedback then dominates.
    assert!(prior.mean() > 0.7);
    let user = prior.updated(FeedbackCounts::new(0.0, 40.0));
    assert!(user.mean() < 0.2, "{}", user.mean());
}

#[test]
fn user_posterior_leaves_the_user_out_of_the_prior() {
    let params = ShrinkageParams::default();
    // Alone in the population: no borrowed prior, Beta(1 + 3, 1 + 1).
    let alone = user_posterior(
        FeedbackCounts::new(3.0, 1.0),
        FeedbackCounts::new(3.0, 1.0),
        &params,
    );
    assert_eq!(alone, BetaPosterior::new(4.0, 2.0));
    // Others 80/20 (population 83/21 includes the user's 3/1): prior Beta(1 + 810/102,
    // 1 + 210/102), then + 3 successes and + 1 failure.
    let p = user_posterior(
        FeedbackCounts::new(3.0, 1.0),
        FeedbackCounts::new(83.0, 21.0),
        &params,
    );
    assert!(close(p.alpha, 4.0 + 810.0 / 102.0, 1e-12));
    assert!(close(p.beta, 2.0 + 210.0 / 102.0, 1e-12));
    // A new user (no feedback) gets the population's prior.
    let new = user_posterior(
        FeedbackCounts::default(),
        FeedbackCounts::new(80.0, 20.0),
        &params,
    );
    assert_eq!(
        new,
        population_prior(FeedbackCounts::new(80.0, 20.0), &params)
    );
}

#[test]
fn discounted_user_posterior_borrows_from_the_others_and_adds_the_discounted_votes() {
    let params = ShrinkageParams::default();
    // Others 80/20, as above; the user's 3/1 votes now weigh 1.5/0.25.
    let p = discounted_user_posterior(
        FeedbackCounts::new(3.0, 1.0),
        FeedbackCounts::new(1.5, 0.25),
        FeedbackCounts::new(83.0, 21.0),
        &params,
    );
    assert!(close(p.alpha, 2.5 + 810.0 / 102.0, 1e-12));
    assert!(close(p.beta, 1.25 + 210.0 / 102.0, 1e-12));
}

#[test]
fn fnv1a_reference_vectors() {
    // Published FNV-1a 64 test vectors.
    assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
}

#[test]
fn context_buckets_are_stable() {
    // Expected buckets computed independently (Python FNV-1a over the same key).
    assert_eq!(
        context_bucket("technical_question", "neutral", "morning"),
        14
    );
    assert_eq!(context_bucket("chat", "positive", "evening"), 80);
    assert_eq!(context_bucket("", "", ""), 67);
    assert_ne!(
        fnv1a_64("ab\u{1f}c\u{1f}".as_bytes()),
        fnv1a_64("a\u{1f}bc\u{1f}".as_bytes())
    );
    for (i, s, t) in [("q", "neg", "night"), ("request", "neutral", "afternoon")] {
        assert!(context_bucket(i, s, t) < 100);
    }
}

#[test]
#[should_panic(expected = "positive and finite")]
fn invalid_parameters_panic() {
    let _ = BetaPosterior::new(0.0, 1.0);
}
