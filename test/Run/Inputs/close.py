"""close.py FILE A B TOL: outputs A and B of FILE agree within TOL."""
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import st  # noqa: E402

t = st.read(sys.argv[1])
a, b, tol = t[sys.argv[2]][2], t[sys.argv[3]][2], float(sys.argv[4])
err = max(abs(x - y) for x, y in zip(a, b))
assert err <= tol, "%s and %s differ by %g" % (sys.argv[2], sys.argv[3], err)
print("%s == %s (max abs err %.3g)" % (sys.argv[2], sys.argv[3], err))
