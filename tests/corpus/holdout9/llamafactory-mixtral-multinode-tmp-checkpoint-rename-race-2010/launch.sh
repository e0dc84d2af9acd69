/home/pai/envs/llama_etuning/bin/pip install transformers==4.36.2
cd /mnt/nas/abc/LLaMA-Factory/
/home/pai/envs/llama_etuning/bin/python -m torch.distributed.run \
    --master_addr $MASTER_ADDR \
    --master_port $MASTER_PORT \
    --nproc_per_node $NPROC_PER_NODE \
    --nnodes $WORLD_SIZE \
    --node_rank $RANK \
    /mnt/nas/yangxue/LLaMA-Factory/src/train_bash.py \
    --deepspeed zero3.json \
    --model_name_or_path /mnt/nas/abc/eval_models/Mixtral-8x7B-v0.1 \
    --stage sft \
    --do_train \
