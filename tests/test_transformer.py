"""The vanilla transformer baseline (rm.TransformerMLM) and the fig. 2 runner, at small sizes."""

import math
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import replica_mlm as rm  # noqa: E402
from replica_mlm.learners.transformer import TransformerMLM, sinusoidal_encoding  # noqa: E402

L, Q = 6, 4


@pytest.fixture(scope="module")
def data():
    pm = rm.PottsModel.random(L=L, q=Q, seed=3, beta=1.5)
    seqs = pm.sample(900, rng=4, sweeps_between=5, burn_in=100)
    return pm, seqs[:600], seqs[600:]


def test_import_is_lazy_and_missing_torch_says_how_to_install():
    code = "import sys, replica_mlm; assert 'torch' not in sys.modules; print('ok')"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "ok\n"
    code = ("import sys; sys.modules['torch'] = None; import replica_mlm as rm\n"
            "try:\n    rm.TransformerMLM\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert 'pip install "replica-mlm[transformer]"' in out
    assert rm.TransformerMLM is TransformerMLM


def test_shapes_and_normalisation(data):
    _, train, test = data
    tf = TransformerMLM(L=L, q=Q, layers=2, d_model=8, heads=2, rng=0)
    c = tf.conditional(test, 2)
    assert c.shape == (test.shape[0], Q) and c.dtype == np.float64
    np.testing.assert_allclose(c.sum(axis=1), 1.0, atol=1e-12)
    allc = tf.conditionals(test)
    assert allc.shape == (test.shape[0], L, Q)
    np.testing.assert_allclose(allc[:, 2], c, atol=1e-6)
    A = tf.attention_maps(test)
    assert A.shape == (2, L, L) and np.all(A >= 0)
    np.testing.assert_allclose(A.sum(axis=2), 1.0, atol=1e-5)
    # the loss convention of FactoredAttention / PottsModel: sum over sites, mean over sequences
    picked = np.take_along_axis(allc, test[:, :, None], axis=2)[:, :, 0]
    assert tf.mlm_loss(test) == pytest.approx(-np.log(picked).sum(axis=1).mean(), rel=1e-6)
    with pytest.raises(ValueError, match="shape"):
        tf.mlm_loss(test[:, :3])
    with pytest.raises(ValueError, match="site index"):
        tf.conditional(test, L)
    with pytest.raises(ValueError, match="divisible"):
        TransformerMLM(L=L, q=Q, d_model=6, heads=4)
    with pytest.raises(ValueError, match="schedule"):
        tf.fit(train, epochs=1, schedule="linear")
    with pytest.raises(ValueError, match="masking"):
        tf.fit(train, epochs=1, masking="none")
    with pytest.raises(ValueError, match="warmup"):
        tf.fit(train, epochs=1, warmup=-1)
    with pytest.raises(ValueError, match="gamma"):
        TransformerMLM(L=L, q=Q, gamma=-1.0)


def _layer_norm(x, w, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * w + b


def test_forward_pass_matches_an_independent_numpy_encoder(data):
    """Post-norm encoder written out in numpy from the parameters: tokens E e_s + gamma p, attention
    softmax(q k^T / sqrt(d_head)), skip + LayerNorm, ReLU MLP, skip + LayerNorm, linear readout."""
    _, _, test = data
    heads, d = 2, 8
    tf = TransformerMLM(L=L, q=Q, layers=2, d_model=d, heads=heads, gamma=0.7, rng=5, dtype="float64")
    P = {k: v.detach().numpy() for k, v in tf.net.state_dict().items()}
    s = test[:7]
    i = 3
    tok = s.copy()
    tok[:, i] = Q  # mask token
    x = P["embed.weight"][tok] + 0.7 * sinusoidal_encoding(L, d)
    dh = d // heads
    for b in range(2):
        p = f"blocks.{b}."
        qkv = x @ P[p + "attn.qkv.weight"].T + P[p + "attn.qkv.bias"]
        o = np.empty_like(x)
        for h in range(heads):
            blk = qkv[:, :, h * 3 * dh:(h + 1) * 3 * dh]
            qh, kh, vh = blk[..., :dh], blk[..., dh:2 * dh], blk[..., 2 * dh:]
            logit = qh @ kh.transpose(0, 2, 1) / math.sqrt(dh)
            att = np.exp(logit - logit.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            o[:, :, h * dh:(h + 1) * dh] = att @ vh
        a = o @ P[p + "attn.out.weight"].T + P[p + "attn.out.bias"]
        x = _layer_norm(x + a, P[p + "norm1.weight"], P[p + "norm1.bias"])
        hdn = np.maximum(x @ P[p + "mlp.0.weight"].T + P[p + "mlp.0.bias"], 0.0)
        m = hdn @ P[p + "mlp.2.weight"].T + P[p + "mlp.2.bias"]
        x = _layer_norm(x + m, P[p + "norm2.weight"], P[p + "norm2.bias"])
    z = x[:, i] @ P["readout.weight"].T + P["readout.bias"]
    expected = np.exp(z - z.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(tf.conditional(s, i), expected, rtol=1e-10, atol=1e-12)


def test_positional_encoding_is_the_sinusoidal_formula():
    for d in (8, 7):
        P = sinusoidal_encoding(L, d)
        for j in range(L):
            for c in range(d):
                k = c // 2
                arg = j / 10000 ** (2 * k / d)
                assert P[j, c] == pytest.approx(math.sin(arg) if c % 2 == 0 else math.cos(arg), abs=1e-12)
    tf = TransformerMLM(L=L, q=Q, d_model=8, rng=0, dtype="float64")
    np.testing.assert_array_equal(tf.net.pe.numpy(), sinusoidal_encoding(L, 8))


def test_gamma_zero_has_no_positions(data):
    """Without the positional encoding the prediction of a masked site ignores the order of the
    others; with it, it does not."""
    _, _, test = data
    s = test[:20]
    perm = np.array([0, 4, 2, 5, 1, 3])  # keeps site 0 in place
    for gamma, same in ((0.0, True), (1.0, False)):
        tf = TransformerMLM(L=L, q=Q, d_model=8, gamma=gamma, rng=1, dtype="float64")
        a, b = tf.conditional(s, 0), tf.conditional(s[:, perm], 0)
        assert np.allclose(a, b, atol=1e-12) == same


def test_masked_site_does_not_see_its_own_colour(data):
    _, _, test = data
    tf = TransformerMLM(L=L, q=Q, layers=3, d_model=8, rng=2)
    s = test[:30]
    for i in range(L):
        base = tf.conditional(s, i)
        for shift in (1, 2, 3):
            t = s.copy()
            t[:, i] = (t[:, i] + shift) % Q
            np.testing.assert_array_equal(tf.conditional(t, i), base)
        t = s.copy()
        t[:, (i + 1) % L] = (t[:, (i + 1) % L] + 1) % Q  # another site does matter
        assert np.max(np.abs(tf.conditional(t, i) - base)) > 1e-4


def test_gradient_matches_finite_differences_of_mlm_loss(data):
    _, train, _ = data
    s = train[:5]
    tf = TransformerMLM(L=L, q=Q, layers=2, d_model=4, heads=2, rng=7, dtype="float64")
    loss = tf._loss_sum(s) / s.shape[0]
    loss.backward()
    assert float(loss.detach()) == pytest.approx(tf.mlm_loss(s), rel=1e-12)
    gen = np.random.default_rng(0)
    h = 1e-6
    checked = 0
    for name, p in tf.net.named_parameters():
        flat = p.data.view(-1)
        for k in gen.choice(flat.numel(), size=min(3, flat.numel()), replace=False):
            old = float(flat[k])
            flat[k] = old + h
            up = tf.mlm_loss(s)
            flat[k] = old - h
            down = tf.mlm_loss(s)
            flat[k] = old
            fd = (up - down) / (2 * h)
            g = float(p.grad.view(-1)[k])
            assert g == pytest.approx(fd, rel=1e-5, abs=1e-8), name
            checked += 1
    assert checked > 20


def test_gradcheck_float64():
    """torch.autograd.gradcheck of the summed masked-site loss w.r.t. the colour embedding and the
    attention projection (the parts the masking and the positional encoding feed)."""
    from torch.func import functional_call

    tf = TransformerMLM(L=4, q=3, layers=1, d_model=4, rng=0, dtype="float64")
    s = np.array([[0, 1, 2, 1], [2, 2, 0, 1]])
    tokens = tf._masked_copies(s)
    rows = torch.arange(tokens.shape[0])
    sites = torch.arange(4).repeat(2)
    target = torch.as_tensor(s).reshape(-1)
    params = dict(tf.net.named_parameters())

    def loss(embed, qkv):
        p = {**params, "embed.weight": embed, "blocks.0.attn.qkv.weight": qkv}
        out, _ = functional_call(tf.net, p, (tokens,))
        return torch.nn.functional.cross_entropy(out[rows, sites], target, reduction="sum")

    args = (params["embed.weight"].detach().clone().requires_grad_(True),
            params["blocks.0.attn.qkv.weight"].detach().clone().requires_grad_(True))
    assert torch.autograd.gradcheck(loss, args)
    assert float(loss(*args).detach()) == pytest.approx(2 * tf.mlm_loss(s), rel=1e-12)


def test_same_rng_same_numbers(data):
    _, train, test = data
    runs = []
    for seed in (11, 11, 12):
        tf = TransformerMLM(L=L, q=Q, layers=1, d_model=8, rng=seed)
        h = tf.fit(train[:200], epochs=2, batch_size=50, lr=0.05, test=test[:50])
        runs.append((np.asarray(h), tf.attention_maps(test[:50])))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert not np.array_equal(runs[0][0], runs[2][0])


def test_training_lowers_the_test_loss_towards_the_conditional_entropy(data):
    pm, train, test = data
    tf = TransformerMLM(L=L, q=Q, layers=1, d_model=8, rng=0)
    before = tf.per_sequence_loss(test)
    hist = tf.fit(train, epochs=12, batch_size=100, lr=0.1, momentum=0.9, test=test)
    after = tf.per_sequence_loss(test)
    assert len(hist) == 12 and hist.test_epochs.tolist() == list(range(1, 13))
    assert hist[-1] == pytest.approx(after.mean(), rel=1e-6)
    diff = before - after
    z = diff.mean() / (diff.std(ddof=1) / math.sqrt(diff.size))
    assert z > 10, z  # paired over test sequences
    H = pm.neg_pseudo_loglikelihood(test)
    uniform = L * math.log(Q)
    assert H < after.mean() < before.mean()
    # at least half the way from the uniform guess to the optimum
    assert after.mean() < H + 0.5 * (uniform - H)


def test_fig2_runner_gives_every_model_the_same_data_and_seeds(tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from replica_mlm.cli import main
    from replica_mlm.learners import transformer
    from replica_mlm.learners.attention import FactoredAttention
    from replica_mlm.validation import figure2_section as figure2
    seen = {"tf_init": [], "tf_fit": [], "fa_fit": []}
    init, fit, fa_fit = transformer.TransformerMLM.__init__, transformer.TransformerMLM.fit, \
        FactoredAttention.fit.__func__

    def spy_init(self, *a, **kw):
        seen["tf_init"].append((kw["layers"], kw["gamma"], kw["rng"]))
        init(self, *a, **kw)

    def spy_fit(self, train, *a, **kw):
        seen["tf_fit"].append((np.array(train), np.array(kw["test"])))
        return fit(self, train, *a, **kw)

    def spy_fa(cls, seqs, *a, **kw):
        seen["fa_fit"].append((np.array(seqs), kw.get("rng"), kw.get("method", "lbfgs"),
                               kw.get("init", "random")))
        return fa_fit(cls, seqs, *a, **kw)

    monkeypatch.setattr(transformer.TransformerMLM, "__init__", spy_init)
    monkeypatch.setattr(transformer.TransformerMLM, "fit", spy_fit)
    monkeypatch.setattr(FactoredAttention, "fit", classmethod(spy_fa))
    st = figure2.Fig2Settings(L=4, q=3, target_hamming=0.5, M=200, n_test=100, seeds=2, epochs=2,
                              eval_every=1, lr=0.05, momentum=0.0, lr_factored=0.02, d_model=4,
                              gammas=(1.0, 3.0), gamma_seeds=2, rec_Ms=(100, 200), max_iter=50,
                              tune_method="gibbs")
    section = figure2.run(tmp_path, rng=5, settings=st)
    pm, _, train, test, _ = figure2.make_data(st, 5)
    seeds = figure2.model_seeds(5, 2)
    assert len(set(seeds)) == 2
    # 1- and 3-layer transformers and the gamma family: the same training seeds, the same data
    by_kind = {}
    for layers, gamma, rng in seen["tf_init"]:
        by_kind.setdefault((layers, gamma), []).append(rng)
    assert by_kind == {(1, 1.0): seeds, (3, 1.0): seeds, (1, 3.0): seeds}
    for tr, te in seen["tf_fit"]:
        np.testing.assert_array_equal(tr, train)
        np.testing.assert_array_equal(te, test)
    full = [(r, m, i) for s, r, m, i in seen["fa_fit"] if s.shape[0] == st.M]
    # SGD from each seed's random start (fig. 2a), one fit from the mean-field start
    assert sorted(r for r, m, _ in full if m == "sgd") == sorted(seeds)
    assert [i for _, m, i in full if m == "lbfgs"] == ["mean-field"]
    for s, _, m, i in seen["fa_fit"]:  # fig. 2c: disjoint subsets of the same training set
        if s.shape[0] < st.M:
            assert m == "lbfgs" and i == "mean-field"
            r = int(np.flatnonzero([np.array_equal(s, train[k:k + s.shape[0]])
                                    for k in range(0, st.M, s.shape[0])])[0])
            assert r < st.seeds
    assert sum(s.shape[0] == 100 for s, *_ in seen["fa_fit"]) == 2
    # the report: every number of fig. 2, figures as PNG and PDF
    report = json.loads((tmp_path / "fig2.json").read_text())
    d = report["data"]
    assert d["conditional_entropy"] == pytest.approx(pm.neg_pseudo_loglikelihood(test), rel=1e-12)
    assert set(d["models"]) == {"transformer_1", "transformer_3", "factored"}
    assert len(d["models"]["transformer_3"]["final"]) == 2 and d["gamma_family"]["gamma"] == [1.0, 3.0]
    names = [c["name"] for c in report["checks"]]
    assert names == ["figure2.data.mixing", "figure2.factored_converged",
                     "figure2.factored_reaches_entropy", "figure2.one_layer_gap",
                     "figure2.three_layers_improve", "figure2.gamma_family_never_beats_factored"]
    for stem in ("fig2a_test_loss", "fig2b_attention_maps", "fig2c_reconstruction",
                 "fig2d_gamma_family"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 0 and (tmp_path / f"{stem}.pdf").exists()
    assert len(section.checks) == 6
    ex = d["finite_M_excess"]  # data beside check 1, not a check
    assert ex["M"] == st.M and ex["expected_excess"] == pytest.approx(ex["trace"] / (2 * st.M))
    assert ex["measured_excess"] == pytest.approx(d["models"]["factored"]["vs_entropy"]["difference"])
    fa = d["models"]["factored"]
    assert len(fa["starts"]) == 3 and fa["trained_layer"] in [f["start"] for f in fa["starts"]]
    assert min(f["objective"] for f in fa["starts"]) == pytest.approx(
        min(f["objective"] for f in fa["starts"] if f["start"] == fa["trained_layer"]))
    # the same numbers in two processes (numbers only: the figures were checked above)
    from replica_mlm.validation import figure2_plots

    monkeypatch.setattr(figure2_plots, "figures", lambda *args, **kwargs: [])
    other = tmp_path / "two"
    figure2.run(other, rng=5, settings=st, workers=2)
    d2 = json.loads((other / "fig2.json").read_text())["data"]
    for key in ("transformer_1", "transformer_3", "factored"):
        assert d2["models"][key]["final"] == d["models"][key]["final"]
    assert d2["gamma_family"]["final"] == d["gamma_family"]["final"]
    res = CliRunner().invoke(main, ["paper-fig2", "--help"])
    assert res.exit_code == 0 and "--quick / --full" in res.output
