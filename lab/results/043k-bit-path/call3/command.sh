# k3.sh as it ran (before regime.sh's sweep ran one variant at a time):
#   lab/exp043/regime.sh $R $B sweep c8 bls12-381 25 8 1 'bits:' 'sppark: env.ZKPIPE_CUDA_BITS=off'
HOST_LIMIT=90GiB T=560 CLIENTS=8 JOBS=1 bash .carry/k3.sh
