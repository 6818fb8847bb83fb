"""Render vortex structures from a snapshot series, headless, with VTK (the ``vtk`` wheel of ``xfft[io]``).

Reads ``RUN/snapshots/snapshots.xmf`` with VTK's XDMF reader (the file ParaView opens), draws isosurfaces of
``vorticity_magnitude`` coloured by ``vorticity_z`` at one snapshot time, and writes a PNG. Off-screen rendering
needs no display (EGL or OSMesa, whichever the wheel finds). The README picture::

    python -m solvers run navier-stokes --n 64 --re 1600 --t-end 9 --snapshot-times 4,9 --out runs/tgv64
    python docs/render_snapshots.py runs/tgv64 --time 9 --out docs/snapshot_vorticity.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import vtk


def render(run: Path, time: float | None, level: float, out: Path, size: tuple[int, int] = (760, 600)) -> None:
    series = run / "snapshots" if (run / "snapshots").is_dir() else run
    meta = json.loads((series / "snapshots.json").read_text())
    reader = vtk.vtkXdmfReader()
    reader.SetFileName(str(series / "snapshots.xmf"))
    reader.UpdateInformation()
    t = time if time is not None else meta["snapshots"][-1]["t"]
    reader.UpdateTimeStep(t)
    grid = reader.GetOutputDataObject(0)
    lo, hi = grid.GetPointData().GetArray("vorticity_magnitude").GetRange()
    contour = vtk.vtkContourFilter()
    contour.SetInputData(grid)
    contour.SetInputArrayToProcess(0, 0, 0, vtk.vtkDataObject.FIELD_ASSOCIATION_POINTS, "vorticity_magnitude")
    contour.SetValue(0, level * hi)
    contour.ComputeNormalsOn()
    smooth = vtk.vtkPolyDataNormals()
    smooth.SetInputConnection(contour.GetOutputPort())
    mapper = vtk.vtkPolyDataMapper()
    mapper.SetInputConnection(smooth.GetOutputPort())
    mapper.SetScalarModeToUsePointFieldData()
    mapper.SelectColorArray("vorticity_z")
    wz = grid.GetPointData().GetArray("vorticity_z").GetRange()
    m = max(abs(wz[0]), abs(wz[1])) * 0.6
    mapper.SetScalarRange(-m, m)
    lut = vtk.vtkLookupTable()
    lut.SetHueRange(0.667, 0.0)
    lut.Build()
    mapper.SetLookupTable(lut)
    actor = vtk.vtkActor()
    actor.SetMapper(mapper)
    actor.GetProperty().SetSpecular(0.3)
    outline = vtk.vtkOutlineFilter()
    outline.SetInputData(grid)
    omap = vtk.vtkPolyDataMapper()
    omap.SetInputConnection(outline.GetOutputPort())
    oactor = vtk.vtkActor()
    oactor.SetMapper(omap)
    oactor.GetProperty().SetColor(0.2, 0.2, 0.2)
    bar = vtk.vtkScalarBarActor()
    bar.SetLookupTable(lut)
    bar.SetTitle("vorticity_z")
    bar.SetNumberOfLabels(5)
    bar.SetWidth(0.08)
    bar.GetTitleTextProperty().SetColor(0, 0, 0)
    bar.GetLabelTextProperty().SetColor(0, 0, 0)
    text = vtk.vtkTextActor()
    shape = "x".join(map(str, meta["grid"]["shape"]))
    text.SetInput(f"{meta['equation']} {shape}, t = {t:g}, isosurface of vorticity magnitude at {100 * level:g}% "
                  "of its max")
    text.GetTextProperty().SetColor(0, 0, 0)
    text.GetTextProperty().SetFontSize(18)
    text.SetPosition(12, size[1] - 34)
    ren = vtk.vtkRenderer()
    ren.SetBackground(1, 1, 1)
    for a in (actor, oactor, bar, text):
        ren.AddActor(a)
    win = vtk.vtkRenderWindow()
    win.SetOffScreenRendering(1)
    win.SetSize(*size)
    win.AddRenderer(ren)
    cam = ren.GetActiveCamera()
    cam.Azimuth(35)
    cam.Elevation(25)
    ren.ResetCamera()
    cam.Zoom(1.15)
    win.Render()
    grab = vtk.vtkWindowToImageFilter()
    grab.SetInput(win)
    grab.Update()
    png = vtk.vtkPNGWriter()
    png.SetFileName(str(out))
    png.SetInputConnection(grab.GetOutputPort())
    png.Write()
    print(f"{out}: t = {t}, |vorticity| range ({lo:.3g}, {hi:.3g}), isosurface {level * hi:.3g}, "
          f"{contour.GetOutput().GetNumberOfPoints()} surface points")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="run directory (or its snapshots/ directory)")
    ap.add_argument("--time", type=float, default=None, help="snapshot time (default: the last)")
    ap.add_argument("--level", type=float, default=0.4, help="isosurface level as a fraction of max |vorticity|")
    ap.add_argument("--out", type=Path, default=Path("snapshot_vorticity.png"))
    args = ap.parse_args()
    render(args.run, args.time, args.level, args.out)


if __name__ == "__main__":
    main()
