#!/usr/bin/env python3
"""Differential kernel generator for the `cuda` translator (issue 13).

Writes random, well-typed `#[vectorize]` and `#[guvectorize]` kernels (targets cpu and cuda) and
one test that runs each on both targets over deterministic inputs and compares the results
(tests/cuda/differential.rs: exact for integers and booleans, a tolerance for floats, NaN == NaN).
The same kernels' C++ is compiled by NVRTC in `every_kernel_compiles_with_nvrtc`.

The committed corpus (tests/cuda/generated.rs) is `--seed 1 --count 40`. A large batch:

    python3 scripts/kernelgen.py --seed 7 --count 300 --out tests/cuda/generated.rs
    UFUNC_CUDA_SIM=1 UFUNC_REQUIRE_GPU=1 cargo test --release --test cuda generated
    # and NVRTC: LD_LIBRARY_PATH=... UFUNC_REQUIRE_NVRTC=1 cargo test --release --test cuda nvrtc
    git checkout tests/cuda/generated.rs

Only constructs the translator supports are generated; float results of inexact operations
(transcendentals) never feed discontinuous ones (casts to integers, comparisons, rounding), so
that a last-bit difference between libm and the SIMD/CUDA math cannot flip a branch.
"""

import argparse
import random

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
SIGNED = ["i8", "i16", "i32", "i64"]
FLOATS = ["f32", "f64"]
COMPLEX = ["Complex<f32>", "Complex<f64>"]
NUMERIC = INTS + FLOATS
ELEMS = INTS + FLOATS + COMPLEX + ["bool"]

FLOAT_METHODS_EXACT = ["abs", "floor", "ceil", "round", "trunc", "sqrt", "signum", "fract"]
FLOAT_METHODS_INEXACT = ["exp", "ln", "sin", "cos", "tanh", "atan", "exp_m1", "ln_1p", "cbrt",
                         "to_degrees", "to_radians", "asinh", "log2", "log10", "exp2", "recip",
                         "sinh", "acos", "asin"]
FLOAT_METHODS2_EXACT = ["min", "max", "copysign"]
FLOAT_METHODS2_INEXACT = ["powf", "hypot", "atan2"]


def real_of(t):
    return "f32" if t == "Complex<f32>" else "f64"


class Val:
    """A generated expression: Rust text, its type, whether its value is exactly reproducible."""

    def __init__(self, text, ty, exact=True):
        self.text, self.ty, self.exact = text, ty, exact


class Gen:
    def __init__(self, rng, helpers):
        self.rng = rng
        self.scope = []  # (name, type, exact)
        self.helpers = helpers  # (name, [param types], return type)
        self.fresh = 0
        self.rets = []  # the kernel's return types, for early `return`s
        self.untyped = set()  # bindings of unsuffixed literals: no method calls on them

    def name(self, prefix):
        self.fresh += 1
        return f"{prefix}{self.fresh}"

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, xs):
        return self.rng.choice(xs)

    # Literals -----------------------------------------------------------------------------
    def lit(self, ty, suffixed=True):
        r = self.rng
        if ty == "bool":
            return Val(self.pick(["true", "false"]), ty)
        if ty in INTS:
            v = r.choice([0, 1, 2, 3, 5, 7, 13, 42, 100])
            neg = ty in SIGNED and r.random() < 0.3 and v != 0
            s = f"{v}{ty if suffixed else ''}"
            return Val(f"(-{s})" if neg else s, ty)
        if ty in FLOATS:
            v = r.choice(["0.5", "1.5", "2.0", "0.25", "3.75", "10.0", "1e-3", "7.0"])
            neg = r.random() < 0.3
            s = f"{v}{ty if suffixed else ''}"
            return Val(f"(-{s})" if neg else s, ty)
        re, im = self.lit(real_of(ty)), self.lit(real_of(ty))
        return Val(f"Complex::new({re.text}, {im.text})", ty)

    def var(self, ty, exact_only):
        vs = [v for v in self.scope if v[1] == ty and (v[2] or not exact_only)]
        if not vs:
            return None
        n, t, e = self.pick(vs)
        return Val(n, t, e)

    # Expressions --------------------------------------------------------------------------
    def expr(self, ty, depth, exact_only=False):
        """An expression of type `ty`; with `exact_only`, only exactly reproducible ones."""
        if depth <= 0 or self.chance(0.25):
            return self.leaf(ty, exact_only)
        if self.chance(0.12):
            return self.structured(ty, depth, exact_only)
        if ty == "bool":
            return self.bool_expr(depth)
        if ty in INTS:
            return self.int_expr(ty, depth)
        if ty in FLOATS:
            return self.float_expr(ty, depth, exact_only)
        return self.complex_expr(ty, depth, exact_only)

    def structured(self, ty, depth, exact_only):
        """A block, a `match` on an integer, or a `loop` with a valued... break-free exit."""
        k = self.rng.randrange(3)
        if k == 0:
            t = self.pick(ELEMS)
            inner = self.expr(t, depth - 1, exact_only)
            name = self.name("b")
            self.scope.append((name, t, inner.exact))
            v = self.expr(ty, depth - 1, exact_only)
            self.scope.pop()
            return Val(f"({{ let {name} = {inner.text}; {v.text} }})", ty, v.exact)
        if k == 1:
            it = self.pick(INTS)
            x = self.expr(it, depth - 1)
            arms = [self.expr(ty, depth - 1, exact_only) for _ in range(3)]
            return Val(f"(match ({x.text} & 3) {{ 0 => {arms[0].text}, 1 | 2 => {arms[1].text}, "
                       f"_ => {arms[2].text} }})", ty, all(a.exact for a in arms))
        h = self.helper_call(ty, depth, exact_only)
        return h if h else self.leaf(ty, exact_only)

    def leaf(self, ty, exact_only):
        """A variable of `ty`, another variable cast to `ty`, or a literal."""
        v = self.var(ty, exact_only)
        if v is not None and self.chance(0.8):
            return v
        if ty in NUMERIC and self.chance(0.7):
            ok = [s for s in self.scope if s[1] in NUMERIC + ["bool"] and (s[2] or not exact_only)]
            if ty not in INTS:
                ok = [s for s in ok if s[1] != "bool"]
            else:
                ok = [s for s in ok if s[2]]
            if ok:
                n, t, e = self.pick(ok)
                return Val(f"({n} as {ty})", ty, e)
        return self.lit(ty)

    def operand_pair(self, ty, depth, exact_only=False):
        """Two operands of `ty`; sometimes one is an unsuffixed literal typed by the other."""
        a = self.expr(ty, depth - 1, exact_only)
        if ty in NUMERIC and self.chance(0.3):
            b = self.lit(ty, suffixed=False)
            return (b, a) if self.chance(0.3) else (a, b)
        return a, self.expr(ty, depth - 1, exact_only)

    def cast_from(self, ty, depth):
        src = self.pick(NUMERIC + (["bool"] if ty in INTS else []))
        v = self.expr(src, depth - 1, exact_only=ty in INTS)
        return Val(f"({v.text} as {ty})", ty, v.exact)

    def cond(self, depth):
        return self.bool_expr(max(depth - 1, 1))

    def if_expr(self, ty, depth, exact_only):
        c = self.cond(depth)
        a = self.expr(ty, depth - 1, exact_only)
        b = self.expr(ty, depth - 1, exact_only)
        return Val(f"(if {c.text} {{ {a.text} }} else {{ {b.text} }})", ty, a.exact and b.exact)

    def helper_call(self, ty, depth, exact_only):
        hs = [h for h in self.helpers if h[2] == ty and (h[3] or not exact_only)]
        if not hs:
            return None
        name, params, _, exact = self.pick(hs)
        args = [self.expr(p, depth - 1, exact_only=True) for p in params]
        return Val(f"{name}({', '.join(a.text for a in args)})", ty, exact)

    def int_expr(self, ty, depth):
        k = self.rng.randrange(12)
        if k == 0:
            return self.cast_from(ty, depth)
        if k <= 3:
            a, b = self.operand_pair(ty, depth)
            op = self.pick(["+", "-", "*", "&", "|", "^"])
            return Val(f"({a.text} {op} {b.text})", ty)
        if k == 4:
            a, b = self.expr(ty, depth - 1), self.expr(ty, depth - 1)
            op = self.pick(["/", "%"])
            return Val(f"({a.text} {op} (({b.text} & 7) + 1))", ty)
        if k == 5:
            a = self.expr(ty, depth - 1)
            st = self.pick(INTS)
            s = self.expr(st, depth - 1)
            op = self.pick(["<<", ">>"])
            return Val(f"({a.text} {op} ({s.text} & 7))", ty)
        if k == 6:
            a, b = self.expr(ty, depth - 1), self.expr(ty, depth - 1)
            m = self.pick(["wrapping_add", "wrapping_sub", "wrapping_mul", "min", "max"])
            return Val(f"{self.recv(a)}.{m}({b.text})", ty)
        if k == 7:
            a = self.expr(ty, depth - 1)
            if ty in SIGNED and self.chance(0.5):
                return Val(f"(-{a.text})", ty)
            if ty in SIGNED and self.chance(0.5):
                return Val(f"{self.recv(a)}.wrapping_neg()", ty)
            return Val(f"(!{a.text})", ty)
        if k == 8:
            return self.if_expr(ty, depth, True)
        if k == 9 and ty in SIGNED and self.chance(0.5):
            a = self.expr(ty, depth - 1)
            return Val(f"{self.recv(a)}.{self.pick(['abs', 'signum', 'wrapping_abs'])}()", ty)
        if k == 9 and ty == "u32":
            a = self.expr(self.pick(INTS), depth - 1)
            return Val(f"{self.recv(a)}.count_ones()", ty)
        if k == 10:
            h = self.helper_call(ty, depth, True)
            if h:
                return h
        return self.cast_from(ty, depth)

    def recv(self, v):
        """`v` as a method receiver (parenthesised unless it is a name or a call)."""
        t = v.text
        if t in self.untyped:
            return f"({t} as {v.ty})"
        if t.isidentifier() or (t.startswith("(") and t.endswith(")")):
            return t
        return f"({t})"

    def float_expr(self, ty, depth, exact_only):
        k = self.rng.randrange(12)
        if k == 0:
            return self.cast_from(ty, depth)
        if k <= 3:
            a, b = self.operand_pair(ty, depth, exact_only)
            op = self.pick(["+", "-", "*", "/", "%"])
            return Val(f"({a.text} {op} {b.text})", ty, a.exact and b.exact)
        if k == 4:
            a = self.expr(ty, depth - 1, True)
            m = self.pick(FLOAT_METHODS_EXACT)
            return Val(f"{self.recv(a)}.{m}()", ty)
        if k == 5 and not exact_only:
            a = self.expr(ty, depth - 1)
            m = self.pick(FLOAT_METHODS_INEXACT)
            if m in ("sin", "cos"):
                # The CPU's vector sin/cos are only accurate for |x| < 1e8 (see math/mod.rs).
                return Val(f"({a.text} % 1e4{ty}).{m}()", ty, False)
            return Val(f"{self.recv(a)}.{m}()", ty, False)
        if k == 6:
            a = self.expr(ty, depth - 1, exact_only)
            if self.chance(0.5) or exact_only:
                b = self.expr(ty, depth - 1, exact_only)
                m = self.pick(FLOAT_METHODS2_EXACT)
                return Val(f"{self.recv(a)}.{m}({b.text})", ty, a.exact and b.exact)
            b = self.expr(ty, depth - 1)
            m = self.pick(FLOAT_METHODS2_INEXACT)
            return Val(f"{self.recv(a)}.{m}({b.text})", ty, False)
        if k == 7 and self.chance(0.3):
            a = self.expr(ty, depth - 1, exact_only)
            return Val(f"{self.recv(a)}.clamp(-2.5, 4.0)", ty, a.exact)
        if k == 7:
            a, b, c = (self.expr(ty, depth - 1, exact_only) for _ in range(3))
            return Val(f"{self.recv(a)}.mul_add({b.text}, {c.text})", ty,
                       a.exact and b.exact and c.exact)
        if k == 8:
            a = self.expr(ty, depth - 1, exact_only)
            if self.chance(0.5):
                return Val(f"{self.recv(a)}.powi({self.rng.randrange(-2, 5)})", ty, False)
            return Val(f"(-{a.text})", ty, a.exact)
        if k == 9:
            return self.if_expr(ty, depth, exact_only)
        if k == 10 and not exact_only:
            c = self.expr("Complex<" + ty + ">", depth - 1)
            m = self.pick(["re", "im", "norm()", "norm_sqr()", "arg()"])
            return Val(f"{self.recv(c)}.{m}", ty, False)
        h = self.helper_call(ty, depth, exact_only)
        if h:
            return h
        return self.cast_from(ty, depth)

    def complex_expr(self, ty, depth, exact_only):
        r = real_of(ty)
        k = self.rng.randrange(8)
        if k == 0:
            a, b = self.expr(r, depth - 1, True), self.expr(r, depth - 1, True)
            return Val(f"Complex::new({a.text}, {b.text})", ty, a.exact and b.exact)
        if k <= 2:
            a, b = self.expr(ty, depth - 1), self.expr(ty, depth - 1)
            return Val(f"({a.text} {self.pick(['+', '-', '*', '/'])} {b.text})", ty, False)
        if k == 3:
            a = self.expr(ty, depth - 1)
            b = self.lit(r, suffixed=False) if self.chance(0.3) else self.expr(r, depth - 1)
            if self.chance(0.5):
                a, b = b, a
            return Val(f"({a.text} {self.pick(['+', '-', '*', '/'])} {b.text})", ty, False)
        if k == 4:
            a = self.expr(ty, depth - 1)
            m = self.pick(["conj()", "exp()", "sqrt()", "ln()", "powi(2)", "powi(3)"])
            return Val(f"{self.recv(a)}.{m}", ty, False)
        if k == 5:
            a = self.expr(ty, depth - 1)
            return Val(f"(-{a.text})", ty, False)
        if k == 6:
            return self.if_expr(ty, depth, False)
        return Val(self.lit(ty).text, ty)

    def bool_expr(self, depth):
        k = self.rng.randrange(7)
        if k <= 2:
            t = self.pick(NUMERIC)
            a, b = self.operand_pair(t, depth, exact_only=True)
            op = self.pick(["<", "<=", ">", ">=", "==", "!="])
            return Val(f"({a.text} {op} {b.text})", "bool")
        if k == 3:
            a, b = self.expr("bool", depth - 1), self.expr("bool", depth - 1)
            return Val(f"({a.text} {self.pick(['&&', '||', '^', '&', '|'])} {b.text})", "bool")
        if k == 4:
            return Val(f"(!{self.expr('bool', depth - 1).text})", "bool")
        if k == 5:
            a = self.expr(self.pick(FLOATS), depth - 1, True)
            m = self.pick(["is_nan", "is_finite", "is_infinite", "is_sign_negative"])
            return Val(f"{self.recv(a)}.{m}()", "bool")
        v = self.var("bool", True)
        return v if v else self.lit("bool")

    # Statements ---------------------------------------------------------------------------
    def stmts(self, count, indent):
        out = []
        for _ in range(count):
            out.extend(self.stmt(indent))
        return out

    def stmt(self, ind):
        k = self.rng.randrange(9)
        pad = " " * ind
        if k == 7 and self.rets:
            # An early return.
            vals = [self.expr(t, 2) for t in self.rets]
            v = vals[0].text if len(vals) == 1 else f"({', '.join(x.text for x in vals)})"
            return [f"{pad}if {self.cond(2).text} {{", f"{pad}    return {v};", f"{pad}}}"]
        if k == 8:
            # `loop` with a counted `break`.
            ty = self.pick(NUMERIC)
            acc, c = self.name("l"), self.name("c")
            init = self.expr(ty, 1, True)
            self.scope.append((acc, ty, init.exact))
            step = self.expr(ty, 2, ty in INTS)
            self.scope[-1] = (acc, ty, init.exact and step.exact)
            return [f"{pad}let mut {acc}: {ty} = {init.text};",
                    f"{pad}let mut {c} = 0i32;",
                    f"{pad}loop {{",
                    f"{pad}    {c} += 1;",
                    f"{pad}    if {c} > {self.rng.randrange(0, 4)} {{",
                    f"{pad}        break;",
                    f"{pad}    }}",
                    f"{pad}    {acc} = {step.text};",
                    f"{pad}}}"]
        if k <= 1 or not self.scope:
            ty = self.pick(ELEMS)
            v = self.expr(ty, 3)
            name = self.name("v")
            annotate = f": {ty}" if self.chance(0.5) else ""
            if self.chance(0.15):
                # An unsuffixed literal: i32 or f64 unless something constrains it.
                ty = self.pick(["i32", "f64"])
                v = self.lit(ty, suffixed=False)
                annotate = ""
                self.untyped.add(name)
            self.scope.append((name, ty, v.exact))
            return [f"{pad}let {name}{annotate} = {v.text};"]
        if k == 2:
            # Shadowing, possibly with another type.
            old = self.pick(self.scope)
            ty = self.pick(ELEMS)
            v = self.expr(ty, 2)
            self.scope = [s for s in self.scope if s[0] != old[0]]
            self.untyped.discard(old[0])
            self.scope.append((old[0], ty, v.exact))
            return [f"{pad}let {old[0]} = {v.text};"]
        if k == 3:
            # An accumulating loop.
            ty = self.pick(NUMERIC)
            acc = self.name("acc")
            if ty in ("i32", "f64") and self.chance(0.3):
                # Unannotated, from an unsuffixed literal: the binding's type comes from what
                # is added into it (a helper's result, say).
                init = self.lit(ty, suffixed=False)
                lines = [f"{pad}let mut {acc} = {init.text};"]
                self.untyped.add(acc)
            else:
                init = self.expr(ty, 1, True)
                lines = [f"{pad}let mut {acc}: {ty} = {init.text};"]
            i = self.name("i")
            n = self.rng.randrange(1, 5)
            it = self.pick(["u32", "i32", "usize", "i64"])
            rng_text = f"0..{n}{it if self.chance(0.5) else ''}"
            form = self.pick(["plain", "plain", "rev", "step", "closed_rev"])
            if form == "rev":
                rng_text = f"({rng_text}).rev()"
            elif form == "step":
                rng_text = f"({rng_text}).step_by({self.rng.randrange(1, 4)})"
            elif form == "closed_rev":
                rng_text = f"(0..={n - 1}{it}).rev()"
            lines.append(f"{pad}for {i} in {rng_text} {{")
            self.scope.append((f"({i} as {ty})", ty, True))
            self.scope.append((acc, ty, init.exact))
            step = self.expr(ty, 2, ty in INTS)
            op = self.pick(["+=", "-=", "*="] + ([] if ty in FLOATS else ["^=", "|=", "&="]))
            lines.append(f"{pad}    {acc} {op} {step.text};")
            if self.chance(0.3):
                c = self.cond(2)
                lines.append(f"{pad}    if {c.text} {{")
                lines.append(f"{pad}        break;")
                lines.append(f"{pad}    }}")
            lines.append(f"{pad}}}")
            self.scope = [s for s in self.scope if not s[0].startswith(f"({i} ")]
            self.scope = [s for s in self.scope if s[0] != acc] + [(acc, ty, init.exact and step.exact)]
            return lines
        if k == 4:
            # A tuple.
            t1, t2 = self.pick(ELEMS), self.pick(ELEMS)
            a, b = self.expr(t1, 2), self.expr(t2, 2)
            p, q = self.name("p"), self.name("q")
            self.scope += [(p, t1, a.exact), (q, t2, b.exact)]
            return [f"{pad}let ({p}, {q}) = ({a.text}, {b.text});"]
        if k == 5:
            # if / else assigning a mutable binding.
            ty = self.pick(NUMERIC)
            m = self.name("m")
            init = self.expr(ty, 1, True)
            c = self.cond(2)
            a, b = self.expr(ty, 2), self.expr(ty, 2)
            self.scope.append((m, ty, init.exact and a.exact and b.exact))
            return [f"{pad}let mut {m}: {ty} = {init.text};",
                    f"{pad}if {c.text} {{",
                    f"{pad}    {m} = {a.text};",
                    f"{pad}}} else if {self.cond(2).text} {{",
                    f"{pad}    {m} = {b.text};",
                    f"{pad}}}"]
        # A while loop counting down.
        ty = self.pick(INTS)
        w = self.name("w")
        n = self.name("n")
        lines = [f"{pad}let mut {n} = {self.rng.randrange(0, 4)}u32;",
                 f"{pad}let mut {w}: {ty} = {self.lit(ty).text};",
                 f"{pad}while {n} > 0 {{"]
        self.scope.append((w, ty, True))
        step = self.expr(ty, 2)
        lines += [f"{pad}    {w} = {step.text};", f"{pad}    {n} -= 1;", f"{pad}}}"]
        return lines


def gen_helper(rng, helpers, idx, prefix):
    g = Gen(rng, helpers)
    params = [rng.choice(NUMERIC + ["bool"]) for _ in range(rng.randrange(1, 3))]
    ret = rng.choice(NUMERIC)
    g.scope = [(f"x{j}", t, True) for j, t in enumerate(params)]
    body = g.expr(ret, 3)
    name = f"{prefix}_h{idx}"
    plist = ", ".join(f"x{j}: {t}" for j, t in enumerate(params))
    helpers.append((name, params, ret, body.exact))
    return [f"#[kernel_fn]", f"fn {name}({plist}) -> {ret} {{", f"    {body.text}", "}", ""]


def gen_vectorize(rng, name, helpers):
    g = Gen(rng, helpers)
    params = [rng.choice(ELEMS) for _ in range(rng.randrange(1, 4))]
    g.scope = [(f"a{j}", t, True) for j, t in enumerate(params)]
    rets = [rng.choice(ELEMS) for _ in range(2 if rng.random() < 0.2 else 1)]
    g.rets = rets
    body = g.stmts(rng.randrange(1, 5), 4)
    vals = [g.expr(t, 3) for t in rets]
    if len(rets) == 1:
        ret_ty, tail = rets[0], vals[0].text
    else:
        ret_ty, tail = f"({', '.join(rets)})", f"({', '.join(v.text for v in vals)})"
    plist = ", ".join(f"a{j}: {t}" for j, t in enumerate(params))
    src = ["#[vectorize(targets = [\"cpu\", \"cuda\"])]",
           f"fn {name}({plist}) -> {ret_ty} {{", *body, f"    {tail}", "}", ""]
    args = ", ".join(f"&sample::<{t}>({j}, 16)" for j, t in enumerate(params))
    return src, f"both!({'agree' if len(rets) == 1 else 'agree2'}, {name}, {args})"


def gen_guvectorize(rng, name, helpers):
    """A reduction `(n)->()` or an elementwise `(n),()->(n)` core."""
    g = Gen(rng, helpers)
    elem = rng.choice(NUMERIC + COMPLEX)
    scal = rng.choice(NUMERIC)
    ret = rng.choice(NUMERIC)
    g.scope = [("s", scal, True)]
    r = rng.random()
    if r < 0.3:
        # View methods: `sum`, `dot`, `row`, `column`, `for x in ..iter()`.
        exact = elem in INTS
        g.scope += [("t", elem, exact), ("d", elem, exact), ("(*x)", elem, True)]
        g.scope.append(("acc", ret, exact))
        step = g.expr(ret, 3, ret in INTS)
        op = "+=" if ret in FLOATS else "^="
        src = [f"#[guvectorize(\"(m,n),()->(m)\", targets = [\"cpu\", \"cuda\"])]",
               f"fn {name}(a: ArrayView2<{elem}>, s: {scal}, mut out: ArrayViewMut1<{ret}>) {{",
               "    for i in 0..a.len_of(Axis(0)) {",
               "        let t = a.row(i).sum() + a.column(i % a.ncols()).sum();",
               "        let d = a.row(i).dot(&a.row(0));",
               f"        let mut acc: {ret} = {g.lit(ret).text};",
               "        for x in a.row(i).iter() {",
               f"            acc {op} {step.text};",
               "        }",
               "        out[i] = acc;",
               "    }",
               "}", ""]
        return src, f"both!(agree, {name}, &sample2::<{elem}>(0), &sample::<{scal}>(1, 4))"
    if r < 0.6:
        g.scope.append(("a[i]", elem, True))
        g.scope.append(("(i as " + ret + ")", ret, True))
        acc_init = g.lit(ret).text
        g.scope.append(("acc", ret, True))
        step = g.expr(ret, 3, ret in INTS)
        op = "+=" if ret in FLOATS else "^="
        src = [f"#[guvectorize(\"(n),()->()\", targets = [\"cpu\", \"cuda\"])]",
               f"fn {name}(a: ArrayView1<{elem}>, s: {scal}) -> {ret} {{",
               f"    let mut acc: {ret} = {acc_init};",
               "    for i in 0..a.len() {", f"        acc {op} {step.text};", "    }",
               "    acc", "}", ""]
    else:
        g.scope.append(("a[i]", elem, True))
        v = g.expr(ret, 3)
        src = [f"#[guvectorize(\"(n),()->(n)\", targets = [\"cpu\", \"cuda\"])]",
               f"fn {name}(a: ArrayView1<{elem}>, s: {scal}, mut out: ArrayViewMut1<{ret}>) {{",
               "    for i in 0..a.len() {", f"        out[i] = {v.text};", "    }", "}", ""]
    return src, f"both!(agree, {name}, &sample2::<{elem}>(0), &sample::<{scal}>(1, 4))"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--out", default="tests/cuda/generated.rs")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    kernels, checks, names = [], [], []
    helpers = []
    for k in range(args.count):
        name = f"gen{args.seed}_{k}"
        if rng.random() < 0.3:
            kernels += gen_helper(rng, helpers, len(helpers), name)
        if rng.random() < 0.15:
            src, check = gen_guvectorize(rng, name, helpers)
        else:
            src, check = gen_vectorize(rng, name, helpers)
        kernels += src
        checks.append(check)
        names.append(name)
    out = [
        f"//! Generated by `python3 scripts/kernelgen.py --seed {args.seed} --count {args.count}`:",
        "//! do not edit. Random kernels run on cpu and cuda and compared (see the script).",
        "#![allow(clippy::all, unused_parens, unused_mut, unused_variables, unused_assignments)]",
        "#![allow(dead_code, unused_comparisons, overflowing_literals, arithmetic_overflow)]",
        "",
        "use super::differential::{agree, agree2, run_all, sample, sample2};",
        "use super::on_gpu;",
        "use ndarray::Axis;",
        "use ufunc::prelude::*;",
        "",
        "/// Runs a kernel on cpu and on cuda and compares the results with `$agree`.",
        "macro_rules! both {",
        "    ($agree:ident, $f:ident, $($arg:expr),*) => {",
        "        $agree(stringify!($f), $f::on(Target::Cpu, $($arg),*), $f::on(Target::Cuda, $($arg),*))",
        "    };",
        "}",
        "",
        *kernels,
        "pub(crate) fn sources() -> Vec<(&'static str, String)> {",
        "    vec![",
        *[f"        (\"{n}\", {n}::cuda_source())," for n in names],
        "    ]",
        "}",
        "",
        "#[test]",
        "fn generated_kernels_agree_on_cpu_and_cuda() {",
        "    on_gpu(\"generated_kernels_agree_on_cpu_and_cuda\", || {",
        "        run_all(&[",
        *[f"            (\"{n}\", || {c})," for n, c in zip(names, checks)],
        "        ]);",
        "    });",
        "}",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
