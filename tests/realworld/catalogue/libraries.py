"""Entries of the third-party libraries games and simulations use: numpy, mesa,
pygame, networkx. Each is skipped when its library is absent (its builders touch the
library only when called)."""

from . import LIBRARIES, Slot, entry

np = LIBRARIES["numpy"]
mesa = LIBRARIES["mesa"]
pygame = LIBRARIES["pygame"]
nx = LIBRARIES["networkx"]
pd = LIBRARIES["pandas"]

# -- numpy ---------------------------------------------------------------------------------

def describe(a):
    """Everything that tells two arrays apart, as plain values."""
    body = a.tolist() if a.dtype.hasobject else a.tobytes()
    return (a.dtype.str, a.dtype.descr, a.shape, a.strides, a.flags.c_contiguous,
            a.flags.f_contiguous, a.flags.writeable, body)


def numpy_entry(name, build, use=describe, pickle=True):
    entry(f"numpy {name}", use, needs="numpy", pickle=pickle)(build)


numpy_entry("float64", lambda: np.linspace(-1, 1, 9))
numpy_entry("float16 and float32", lambda: np.array([1.5, -2, 3e4], dtype=np.float16).astype("f4"))
numpy_entry("int16", lambda: np.arange(-5, 5, dtype=np.int16))
numpy_entry("uint64 extremes", lambda: np.array([2 ** 64 - 1, 0], dtype=np.uint64))
numpy_entry("bool", lambda: np.array([True, False, True]))
numpy_entry("complex64", lambda: np.array([1 + 2j, -3j], dtype=np.complex64))
numpy_entry("datetime64", lambda: np.array(["2020-01-01T10:00", "NaT"], dtype="M8[m]"))
numpy_entry("timedelta64", lambda: np.array([1, -2], dtype="m8[s]"))
numpy_entry("unicode", lambda: np.array(["héllo", "", "z"]))
numpy_entry("bytes", lambda: np.array([b"ab", b"\x00c"]))
numpy_entry("structured", lambda: np.array(
    [(1, (0.5, 2.0), "ore"), (2, (1.5, -1.0), "gem")],
    dtype=[("id", "<i4"), ("pos", "<f8", (2,)), ("name", "U8")]))
numpy_entry("big-endian", lambda: np.arange(4, dtype=">f4"))
numpy_entry("Fortran order", lambda: np.asfortranarray(np.arange(12.).reshape(3, 4)))
# pickle copies it into a new contiguous array: other strides, no base
numpy_entry("non-contiguous slice", lambda: np.arange(40.).reshape(5, 8)[::2, 1::3], pickle=False)
numpy_entry("read-only", lambda: np.frombuffer(b"abcd", dtype=np.uint8))

def _objects():
    shared = {"hp": 3}
    arr = np.empty(4, dtype=object)
    arr[:] = [shared, shared, "x", None]
    return arr

numpy_entry("object", _objects, lambda a: (a.tolist(), a[0] is a[1]))

def _views():
    base = np.arange(24.).reshape(4, 6)
    return Slot(base=base, rows=base[1:3], cols=base[:, ::2], T=base.T,
                flat=base.reshape(-1), as_int=base.view(np.int64))

def _poke_views(s):
    s.base[2, 2] = -1                  # seen through every view that shares it
    return (s.rows[1, 2], s.cols[2, 1], s.T[2, 2], s.flat[14], int(s.as_int[2, 2]),
            [np.shares_memory(v, s.base) for v in (s.rows, s.cols, s.T, s.flat, s.as_int)])

numpy_entry("views sharing a base", _views, _poke_views, pickle=False)

numpy_entry("scalars in a list", lambda: [
    np.float64(1.5), np.int8(-3), np.uint32(7), np.bool_(True), np.float32(0.25),
    np.complex128(1j), np.datetime64("2021-02-03"), np.timedelta64(5, "s"), np.str_("hi"),
    np.bytes_(b"x")], lambda xs: [(type(x).__name__, repr(x)) for x in xs])

def _generator():
    gen = np.random.default_rng(7)
    gen.random(10)
    return gen

numpy_entry("random.Generator mid-sequence", _generator,
            lambda g: (g.random(5).tolist(), g.integers(0, 100, 5).tolist(),
                       g.normal(size=3).tolist()))

def _legacy():
    rs = np.random.RandomState(5)
    rs.normal()
    return rs

numpy_entry("random.RandomState mid-sequence", _legacy,
            lambda r: (r.normal(size=3).tolist(), r.randint(0, 9, 4).tolist()))


# -- mesa ----------------------------------------------------------------------------------

if mesa is not None:
    class Trader(mesa.Agent):
        def __init__(self, model):
            super().__init__(model)
            self.wealth = 1
            self.where = model.rng.random(2)

        def step(self):
            if self.wealth > 0:
                other = self.random.choice(list(self.model.agents))
                other.wealth += 1
                self.wealth -= 1
            self.where = self.where + self.model.rng.normal(size=2)

    class Market(mesa.Model):
        def __init__(self, n=12, seed=None):
            super().__init__(rng=seed)
            Trader.create_agents(self, n)

        def step(self):
            self.agents.shuffle_do("step")



def _market():
    model = Market(seed=42)
    model.step()
    model.step()
    return model


def _step_market(model):
    for _ in range(3):
        model.step()
    return sorted((a.unique_id, a.wealth, tuple(a.where.tolist())) for a in model.agents)


entry("mesa model", _step_market, needs="mesa", allow="mesa")(_market)

if mesa is not None:
    from mesa.discrete_space import CellAgent



if mesa is not None and nx is not None:
    import inspect

    from mesa.discrete_space import Network

    class Carrier(CellAgent):
        def __init__(self, model, cell):
            super().__init__(model)
            self.cell, self.sick = cell, False

        def step(self):
            if self.sick:
                for other in self.cell.neighborhood.agents:
                    if self.random.random() < 0.3:
                        other.sick = True

    class Outbreak(mesa.Model):
        """Agents on a network: its __setstate__ reads the cells its state holds."""
        def __init__(self, seed=None):
            super().__init__(rng=seed)
            # mesa 3.4+ lays the network out and indexes the positions in a scipy
            # KDTree (a C object autosave has no adapter for yet): a topological network
            extra = ({"layout": None} if "layout" in inspect.signature(Network).parameters
                     else {})
            self.grid = Network(nx.erdos_renyi_graph(20, 0.2, seed=3), capacity=1,
                                random=self.random, **extra)
            for cell in self.grid.all_cells:
                Carrier(self, cell)
            next(iter(self.agents)).sick = True

        def step(self):
            self.agents.shuffle_do("step")


def _outbreak():
    model = Outbreak(seed=5)
    model.step()
    return model


def _spread(model):
    for _ in range(3):
        model.step()
    return sorted((a.unique_id, a.sick, a.cell.coordinate) for a in model.agents)


# Network.__setstate__ connects the cells again in an order that may depend on the
# loading process's hash seed, so a second save of the loaded model may differ (pickle's
# second dump differs even in one process); the model behaves the same.
entry("mesa model on a network", _spread, needs="mesa", allow=("mesa", "networkx"),
      resaves_alike=None)(_outbreak)


# -- numpy.ma ------------------------------------------------------------------------------

def _masked():
    ma = np.ma
    return [ma.masked_array([1.5, 2, 3], mask=[0, 1, 0], fill_value=-1),
            # fill_value given: MaskedArray.__setstate__ sets a default one where it was
            # None (after pickle too), so a second save would differ by it
            ma.masked_array(np.arange(6).reshape(2, 3), mask=[[1, 0, 0], [0, 0, 1]],
                            fill_value=0)]


def _use_masked(xs):
    return [(x.filled().tolist(), x.mask.tolist(), float(x.mean()), x.fill_value.item())
            for x in xs]


entry("numpy.ma masked arrays", _use_masked, needs="numpy", allow="numpy")(_masked)


# -- pygame --------------------------------------------------------------------------------

def pygame_entry(name, build, use):
    entry(f"pygame {name}", use, needs=f"pygame.{name}")(build)


pygame_entry("Rect", lambda: pygame.Rect(3, 4, 10, 20),
             lambda r: (tuple(r.move(2, 2).inflate(4, 4)), r.collidepoint(5, 5)))
pygame_entry("FRect", lambda: pygame.FRect(0.5, 1.25, 3, 4),
             lambda r: (tuple(r.move(0.25, 0)), r.center))
pygame_entry("Vector2", lambda: pygame.Vector2(3, 4),
             lambda v: (v.length(), tuple(v.rotate(90)), tuple(v.normalize())))
pygame_entry("Vector3", lambda: pygame.Vector3(1, 2, 2),
             lambda v: (v.length(), tuple(round(c, 9) for c in v.rotate_z(30))))
pygame_entry("Color", lambda: pygame.Color(10, 20, 30, 200),
             lambda c: (tuple(c), tuple(c.lerp((255, 255, 255, 255), 0.5)), c.hsva))


# -- networkx ------------------------------------------------------------------------------

class Town:
    def __init__(self, name, people):
        self.name, self.people = name, people


def _roads():
    g = nx.DiGraph(name="roads")
    towns = [Town(f"t{i}", i * 10) for i in range(6)]
    for a, b in zip(towns, towns[1:]):
        g.add_edge(a, b, cost=a.people + b.people)
    g.add_edge(towns[-1], towns[0], cost=1)
    return g


def _travel(g):
    first = next(iter(g.nodes))
    path = nx.shortest_path(g, first, list(g.nodes)[3], weight="cost")
    for town in list(g.nodes):
        town.people += g.out_degree(town) * 3
    g.remove_edge(*max(g.edges, key=lambda e: g.edges[e]["cost"]))
    return ([t.name for t in path], g.graph, sorted((t.name, t.people) for t in g.nodes),
            sorted((a.name, b.name, d["cost"]) for a, b, d in g.edges(data=True)))


entry("networkx graph with node objects", _travel, needs="networkx", allow="networkx")(_roads)



# -- pandas --------------------------------------------------------------------------------

def _frames():
    days = pd.date_range("2024-03-30", periods=4, freq="D", tz="Europe/Paris")
    return Slot(
        numbers=pd.DataFrame({"hp": [10, 7, 3, 0], "speed": [1.5, 2.0, 0.5, 0.0]}),
        text=pd.DataFrame({"name": ["orc", "elf", None, "imp"]},
                          index=pd.Index(["a", "b", "c", "d"], name="id")),
        kinds=pd.Series(pd.Categorical(["ore", "gem", "ore", "wood"]), name="kind"),
        when=pd.Series(days, name="when"),
        grid=pd.DataFrame({"v": [1, 2, 3, 4]}, index=pd.MultiIndex.from_product(
            [[0, 1], ["x", "y"]], names=["row", "col"])),
        hours=pd.Series([1.0, 2.5], index=pd.to_timedelta(["1h", "2h"])),
    )


def _use_frames(s):
    s.numbers["hp"] -= 1
    return (s.numbers.sum().to_dict(), s.text["name"].fillna("?").str.upper().tolist(),
            s.kinds.value_counts().to_dict(), s.kinds.cat.categories.tolist(),
            [str(t) for t in s.when + pd.Timedelta(hours=1)], str(s.when.dt.tz),
            s.grid.xs(1, level="row")["v"].tolist(), s.grid.index.names,
            s.hours.index.total_seconds().tolist())


entry("pandas frames, series and indexes", _use_frames, needs="pandas", allow="pandas")(
    _frames)
