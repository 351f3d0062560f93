#!/usr/bin/python3
"""Study behind docs/scaling.md §2: can the multigrid coarse levels use star (5-point) operators, so that
every level runs in stencil form, instead of the 21-point Galerkin products of the bilinear transfers?

One field of the benchmark problem (2-D OU, Scharfetter-Gummel fluxes, D = 0.25, drift towards (1, 0.5), box
[-6, 6]^2, no-flux walls), J = a I - A with a = 150 (BDF2 at dt = 0.01). V(1,1) cycles with one symmetric
Gauss-Seidel sweep per level and direction, cell-centred bilinear prolongation P1 and restriction P1^T (as
solver/propagation/GeometricMultigrid.cpp), levels down to 8 cells per axis, a direct solve on the coarsest; right-hand side
random (seed 1), zero start. Coarse operators:
  galerkin  P1^T J P1 (what fpdp uses);
  S (a number)  star operators from piecewise-constant aggregation, P0^T A P0 with the couplings scaled by S and a
             mass-conserving diagonal (S = 0.5 is about the operator rediscretised on the coarse mesh).
Prints the relative residual after each of four cycles.

    /usr/bin/python3 bench/mg_coarse_operator_study.py CELLS MODE [MODE ...]    e.g. 512 galerkin 1.0 0.5
"""
import sys

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spl

def bern(x):
    x=np.asarray(x,float); out=np.empty_like(x); small=np.abs(x)<1e-8
    out[small]=1-x[small]/2; out[~small]=x[~small]/np.expm1(x[~small]); return out
def fp_operator(n, L=6.0, D=0.25, m=(1.0,0.5), lam=1.0):
    h=2*L/n; c=-L+h*(np.arange(n)+0.5); N=n*n
    idx=lambda i,j: i+n*j
    rows=[];cols=[];vals=[]
    # faces in x: between (i,j) and (i+1,j); drift b = -lam (x - m) at the face
    for axis in (0,1):
        for j in range(n):
            for i in range(n-1):
                a,b=(idx(i,j),idx(i+1,j)) if axis==0 else (idx(j,i),idx(j,i+1))
                xf=-L+h*(i+1); mm=m[axis]; drift=-lam*(xf-mm)
                pe=drift*h/D
                # SG flux from a to b: F = D/h (B(-pe) u_a - B(pe) u_b); du_a/dt -= F/h, du_b/dt += F/h
                fa=D/h/h*bern(-pe); fb=D/h/h*bern(pe)
                rows+= [a,a,b,b]; cols+=[a,b,a,b]; vals+=[-fa, fb, fa, -fb]
    return sp.csr_matrix((vals,(rows,cols)),shape=(N,N))
def P1(nc):
    nf=2*nc; r=[];c=[];v=[]
    def w1(i):
        own=i//2; other=own-1 if i%2==0 else own+1
        if other<0 or other>=nc: return [(own,1.0)]
        return [(own,0.75),(other,0.25)]
    for j in range(nf):
        for i in range(nf):
            for (ci,wi) in w1(i):
                for (cj,wj) in w1(j):
                    r.append(i+nf*j); c.append(ci+nc*cj); v.append(wi*wj)
    return sp.csr_matrix((v,(r,c)),shape=(nf*nf,nc*nc))
def P0(nc):
    nf=2*nc; r=np.arange(nf*nf); i=r%nf; j=r//nf
    return sp.csr_matrix((np.ones(nf*nf),(r,(i//2)+nc*(j//2))),shape=(nf*nf,nc*nc))
def sgs(J,b,x,zero=False):
    if zero: x=np.zeros_like(b)
    Lw=sp.tril(J,format='csr'); U=sp.triu(J,1,format='csr')
    x=spl.spsolve_triangular(Lw,b-U@x,lower=True)
    Up=sp.triu(J,format='csr'); Ls=sp.tril(J,-1,format='csr')
    x=spl.spsolve_triangular(Up,b-Ls@x,lower=False)
    return x
def build(n, a, mode, ncmin=8):
    A=fp_operator(n); J=(a*sp.identity(n*n)-A).tocsr()
    levels=[(J,None)]
    nn=n; Al=A; Jl=J
    while nn//2>=ncmin:
        nc=nn//2; P=P1(nc); Q=P0(nc)
        if mode=='galerkin': Jc=(P.T@Jl@P).tocsr(); Ac=None
        else:
            Aagg=(Q.T@Al@Q).tocoo()
            off=Aagg.row!=Aagg.col
            s=float(mode)  # scale of the off-diagonal couplings
            vals=np.where(off,Aagg.data*s,0.0)
            Ac=sp.csr_matrix((vals,(Aagg.row,Aagg.col)),shape=Aagg.shape)
            colsum=np.asarray(Ac.sum(axis=0)).ravel()
            Ac=(Ac-sp.diags(colsum)).tocsr()   # mass-conserving diagonal
            Jc=(4*a*sp.identity(nc*nc)-Ac).tocsr(); Al=Ac/4.0  # coarse FV operator on averages
        levels.append((Jc,P)); Jl=Jc; nn=nc
    return levels
def vcycle(levels,l,b,x,zero):
    J,_=levels[l]
    if l==len(levels)-1: return spl.spsolve(J.tocsc(),b)
    x=sgs(J,b,x,zero)
    r=b-J@x
    P=levels[l+1][1]
    ec=vcycle(levels,l+1,P.T@r,None,True)
    x=x+P@ec
    return sgs(J,b,x)
n=int(sys.argv[1]); a=150.0
for mode in sys.argv[2:]:
    lv=build(n,a,mode)
    J=lv[0][0]; rng=np.random.default_rng(1); b=rng.standard_normal(n*n)
    x=np.zeros(n*n); r0=np.linalg.norm(b); out=[]
    for it in range(4):
        x=vcycle(lv,0,b,x,it==0); out.append(np.linalg.norm(b-J@x)/r0)
    print(n,mode,len(lv),["%.1e"%v for v in out],flush=True)
